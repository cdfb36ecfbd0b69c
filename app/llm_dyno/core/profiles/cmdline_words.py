"""The words of a pasted command line as a shell would pass them to the command: the first command
that starts a server (``docker run``, ``podman run``, ``vllm serve``; README lines before it that set
variables are filled in, other commands are named and passed over), each word with its line, a ``$``
a shell passes as written escaped as Compose escapes it. :mod:`~llm_dyno.core.profiles.cmdline_import`
reads those words into a profile draft.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from llm_dyno.core.profiles.import_common import META_COMMENT, parse_meta_comment
from llm_dyno.core.profiles.launchers import launcher_length
from llm_dyno.core.profiles.shellwords import Word, first_command, rest_text, split_shell
from llm_dyno.core.secrets import escape_literal, is_secret_name, reference_name

Token = tuple[str, int]  # a word and its 1-based line

_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_AS_WRITTEN_OPTS = ("--label", "-l")
_VOLUME_OPTS = ("-v", "--volume", "--mount")  # docker options whose values launch passes on as written
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")  # $NAME or ${NAME}


def tokenize(
    text: str, source: str | None, warnings: list[str], literal: set[str] | None = None
) -> tuple[list[Token], dict[str, Any]]:
    """The words of the first command of the text, with their lines; also the exporter's metadata.
    ``literal`` collects the words (and ``NAME=`` values) whose ``$`` a shell passes as written.

    The command ends where a shell would end it (a newline that is not continued, ``;``, ``&&``, ``|``,
    a redirection); whatever follows is named in a warning and not imported. A comment line inside a
    ``\\`` continuation is skipped (a shell would end the command there), with a warning.
    """
    meta: dict[str, Any] = {}
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if line.strip().startswith(META_COMMENT):
            meta = parse_meta_comment(line.strip(), warnings)
            lines[number] = ""
    clean = "\n".join(lines)
    split = split_shell(clean, source, skip_comment_lines=True)
    for number in split.skipped_comment_lines:
        warnings.append(
            f"line {number}: a comment line inside a continued command was skipped "
            "(a shell would end the command there)"
        )
    command, rest = first_command(split.words)
    original = (command, rest)
    assigned: dict[str, str] = {}
    skipped: list[str] = []
    # a pasted README block: `hf_cache_dir=…` lines set shell variables the command uses; commands
    # before the server's (`docker network create …`, `mkdir -p …`) are named and passed over
    while command and rest and not _launches([w.text for w in command]):
        if all(_ASSIGN_RE.match(w.text) for w in command):
            for w in command:
                key, _, val = w.text.partition("=")
                assigned[key] = val
        else:
            skipped.append(" ".join(w.text for w in command))
        following, after = first_command(rest)
        if not following:
            break
        command, rest = following, after
    if not _launches([w.text for w in command]):
        command, rest = original  # no server command anywhere: the error points at the first one
        assigned, skipped = {}, []
    if skipped:
        warnings.append(
            "commands before the server's are not imported (run them yourself if they are needed): "
            + "; ".join(skipped)
        )
    if assigned:
        command = _expand(command, assigned, warnings)
    if rest:
        first = next(w for w in rest if w.text != "\n" or not w.operator)
        warnings.append(
            f"line {first.line}: the command ends before {rest_text(clean, rest)!r}; "
            "that is not part of it and is not imported"
        )
    for j, word in enumerate(command):
        if word.substitution and not _is_volume(command, j):  # a volume's is filled in or refused
            warnings.append(
                f"line {word.line}: {word.text!r} holds a command substitution that a shell would run "
                "($(pwd), `…`); kept as written: replace it with the real value"
            )
    out = [
        (
            w.text if not w.literal_dollar or _passed_as_written(command, j) else _kept_literal(w, warnings),
            w.line,
        )
        for j, w in enumerate(command)
    ]
    if literal is not None:
        for (text, _), word in zip(out, command, strict=True):
            if word.literal_dollar:
                literal.update((text, text.partition("=")[2]))
    return out, meta


def _passed_as_written(command: list[Word], j: int) -> bool:
    """Whether word ``j`` is a docker option's value that launch passes on as written (a label: only
    the environment, the image and the command are filled in), so its ``$`` needs no escape."""
    before = command[j - 1].text if j else ""
    return before in _AS_WRITTEN_OPTS or command[j].text.partition("=")[0] in _AS_WRITTEN_OPTS


def _is_volume(command: list[Word], j: int) -> bool:
    """Whether word ``j`` is a ``-v`` / ``--volume`` / ``--mount`` value (attached or not)."""
    before = command[j - 1].text if j else ""
    text = command[j].text
    return (
        before in _VOLUME_OPTS
        or text.startswith(("--volume=", "--mount="))
        or (text.startswith("-v") and not text.startswith("--") and len(text) > 2)
    )


def _kept_literal(word: Word, warnings: list[str]) -> str:
    """A word whose ``$`` a shell passes as written (``-e 'X=${foo}'``, ``\\$``): where the value reads
    like a reference, which launch would fill in, it is escaped as Compose escapes it (``$${foo}``).

    Only there the quoting changed the meaning (unquoted, the shell would have filled it in; stored
    unescaped, launch would), so only there it is said. A quoted reference to a secret
    (``-e 'HF_TOKEN=${HF_TOKEN}'``) stays a reference: docker run would pass the text, not the token,
    and a profile never stores a secret-named value as text."""
    key, eq, value = word.text.partition("=")
    if escape_literal(word.text) != word.text:
        target, prefix = word.text, ""
    elif eq and escape_literal(value) != value:
        target, prefix = value, f"{key}="
    else:
        return word.text  # a shell passes it as written, and so does launch: nothing to say
    name = reference_name(target)
    if name is not None and (is_secret_name(name) or (prefix and is_secret_name(key))):
        warnings.append(
            f"line {word.line}: {target} is quoted, so docker run would pass the text {target}, not the "
            f"secret; the profile keeps it a reference, filled in from your environment at launch (a "
            "secret is never stored as text)"
        )
        return word.text
    kept = prefix + escape_literal(target)
    warnings.append(
        f"line {word.line}: {target} is in single quotes (or its $ is escaped), so a shell passes the text "
        f"{target} instead of filling it in; the container gets that text: stored as "
        f"{escape_literal(target)!r}, which launch passes on as {target!r} without filling it in"
    )
    return kept


def _launches(words: list[str]) -> bool:
    """Whether a command starts a server: ``docker run …`` / ``podman run …`` or ``vllm serve …``."""
    i = skip_prefix([(w, 0) for w in words], [])
    if i < len(words) and PurePosixPath(words[i]).name in ("docker", "podman"):
        return "run" in words[i + 1 : i + 6]
    return i < len(words) and launcher_length(words, i) > 0


def _expand(command: list[Word], assigned: dict[str, str], warnings: list[str]) -> list[Word]:
    """Fill in the variables the pasted text itself set on the lines before the command."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in assigned:
            warnings.append(f"${name} filled in from the line that sets it: {assigned[name]}")
            return assigned[name]
        return m.group(0)

    # a word whose $ a shell passes as written ('${foo}') is not filled in either
    return [w if w.literal_dollar else replace(w, text=VAR_RE.sub(value, w.text)) for w in command]


def skip_prefix(tokens: list[Token], env: list[Token]) -> int:
    """Skip ``sudo [-E …]``, ``env`` and ``NAME=value`` assignments; collect the assignments."""
    i = 0
    while i < len(tokens):
        word = tokens[i][0]
        if word in ("sudo", "env", "exec", "command"):
            i += 1
            while i < len(tokens) and tokens[i][0].startswith("-"):
                i += 2 if tokens[i][0] in ("-u", "-g", "-C") else 1
        elif _ASSIGN_RE.match(word):
            env.append(tokens[i])
            i += 1
        else:
            return i
    return i
