"""How a container's argv (entrypoint + command) or a command line launches vLLM: which words are the
launcher (``vllm serve``, ``python -m vllm.entrypoints…``, a shell script) and which are vLLM's arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.shellwords import rest_text, split_shell

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})
_SHELL_C_RE = re.compile(r"^-[a-z]*c[a-z]*$")


def launcher_length(tokens: list[str], i: int) -> int:
    """How many tokens from ``i`` spell a vLLM server launcher (``vllm serve``, ``python -m vllm…``), or 0."""
    rest = tokens[i:]
    if len(rest) >= 2 and "vllm" in PurePosixPath(rest[0]).name and rest[1] == "serve":
        return 2
    if len(rest) >= 3 and PurePosixPath(rest[0]).name.startswith("python") and rest[1] == "-m":
        if rest[2] == "vllm.entrypoints.cli.main" and len(rest) >= 4 and rest[3] == "serve":
            return 4
        if rest[2].startswith("vllm.entrypoints"):
            return 3
    return 0


def split_launch(entry: list[str], command: list[str]) -> int:
    """Where the container's argv (entrypoint + command) stops being launcher and starts being vLLM args.

    Docker joins entrypoint and command into one argv, so any split point launches the same thing;
    this picks the one that leaves exactly the ``vllm serve`` arguments after it.
    """
    full = entry + command
    for i in range(len(entry)):
        n = launcher_length(full, i)
        if n:
            return i + n
    if entry and len(full) >= 3 and PurePosixPath(full[0]).name in SHELLS and _SHELL_C_RE.match(full[1]):
        # `sh -c SCRIPT ARG0 "$@"…`: the token after the script becomes $0, the rest are "$@"
        cut = min(4, len(full))
        return cut + launcher_length(full, cut)
    return len(entry) + launcher_length(full, len(entry))


@dataclass
class Launch:
    """How a container's argv (entrypoint + command) was read: launcher, pre-start script, vLLM args."""

    entrypoint: tuple[str, ...] | None
    pre_start: str | None
    argv: list[str]
    argv_where: list[Location]


def _script_launch(script: str, warnings: list[str]) -> tuple[str | None, list[str], list[str]] | None:
    """A ``sh -c`` script that runs ``vllm serve ARGS`` itself (not through ``"$@"``): the script before
    that command (a pre-start script), the launcher words and ARGS. None when it has no such command."""
    try:
        words = split_shell(script).words
    except ImportFormatError:
        return None
    texts = [w.text for w in words]
    for k, w in enumerate(words):
        if w.operator or (k and not words[k - 1].operator):
            continue  # a command starts at the beginning or right after an operator
        j = k + 1 if w.text == "exec" else k
        n = launcher_length(texts, j) if j < len(texts) and not words[j].operator else 0
        if not n:
            continue
        end = j + n
        while end < len(words) and not words[end].operator:
            end += 1
        args = texts[j + n : end]
        if '"$@"' in script[words[j].start :] or "$@" in args or "$*" in args:
            return None  # `exec vllm serve "$@"`: the arguments come from the command; split as usual
        tail = words[end:]
        if [t for t in tail if not (t.operator and t.text == "\n")]:
            warnings.append(
                "the shell script goes on after its vllm serve command: "
                f"{rest_text(script, tail)!r} is not kept"
            )
        pre = script[: w.start].rstrip()
        pre = pre.rstrip(";").rstrip()
        for arg in args:
            if "$" in arg:
                warnings.append(f"{arg!r}: a shell variable of the script is kept as written, not expanded")
        return (pre or None), texts[j : j + n], args
    return None


def read_launch(entry: list[str], command: list[str], where: list[Location], warnings: list[str]) -> Launch:
    """Read a container's entrypoint and command: which part launches vLLM and which are its arguments.

    Handles the stock image (command = model and flags), an explicit ``vllm serve`` / ``python -m vllm…``,
    ``command: serve MODEL …`` (for an image whose entrypoint is ``vllm``), and a shell script
    (``bash -c "pip install x && vllm serve MODEL …"``), whose vLLM line becomes the profile's flags and
    the rest its pre-start script.
    """
    full = entry + command
    while len(where) < len(full):
        where.append(where[-1] if where else Location(None))
    if len(full) >= 3 and PurePosixPath(full[0]).name in SHELLS and _SHELL_C_RE.match(full[1]):
        found = _script_launch(full[2], warnings)
        if found is not None:
            pre, launcher, args = found
            extra = full[3:]
            if extra:
                warnings.append(f"arguments after the shell script ({' '.join(extra)}) are not kept")
            warnings.append(
                "the script's vllm serve line is read as the profile's model and flags"
                + (
                    "; the rest of the script runs first (pre_start), then exec vllm serve"
                    if pre
                    else f"; the container runs {' '.join(launcher)} with them"
                )
            )
            return Launch(None if pre else tuple(launcher), pre, args, [where[2]] * len(args))
    if not entry and command[:1] == ["serve"] and len(command) > 1:
        warnings.append(
            "command starts with 'serve' (for an image whose entrypoint is vllm): the profile runs "
            "vllm serve as the entrypoint with the model and flags that follow"
        )
        return Launch(("vllm", "serve"), None, command[1:], where[len(entry) + 1 :])
    cut = split_launch(entry, command)
    if cut and not entry:
        warnings.append("the command starts the server itself; kept as the entrypoint")
    return Launch(tuple(full[:cut]) if cut else None, None, full[cut:], where[cut:])
