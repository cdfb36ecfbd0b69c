"""Read a pasted ``docker run …`` or ``vllm serve …`` command line into a profile draft.

The text is split the way a POSIX shell would (quotes, ``\\`` line continuations, ``#`` comment lines),
keeping the line each word came from so that errors can point at it. Shell variables are not expanded:
what was pasted is what the profile keeps, except in a volume (``-v $(pwd):/workspace``), whose host
folder is resolved as the shell would when the line is pasted (kept as written, Docker would read it as
a volume name, and a compose export as ``<project>_$(pwd)``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.cmdline_words import VAR_RE, Token, skip_prefix, tokenize
from llm_dyno.core.profiles.compose_volumes import warn_host_access
from llm_dyno.core.profiles.import_common import Draft, checked_env_name
from llm_dyno.core.profiles.launchers import launcher_length, read_launch
from llm_dyno.core.profiles.shellwords import expand_word
from llm_dyno.core.secrets import is_secret_name, redact_secrets, reference_name

_SHELL_VAR_RE = re.compile(r"(?<!\$)\$\{?[A-Za-z_]")  # not a literal one, escaped as $${foo}
_DEFAULT_RE = re.compile(r"(\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=?+])[^}]*\}")
_KEPT = {
    "-p": "--publish",
    "-v": "--volume",
    "-e": "--env",
    "--net": "--network",
    "-u": "--user",
    "-w": "--workdir",
    "-l": "--label",
}
# Docker options that take a value (so the next word is not the image).
_VALUE_OPTS = frozenset(
    re.findall(
        r"\S+",
        "--publish --volume --env --env-file --gpus --runtime --ipc --shm-size --name --entrypoint "
        "--restart --network --mount -w --workdir -u --user -h --hostname -l --label --label-file "
        "--ulimit --cpus -m --memory --memory-swap --device --add-host --cap-add --cap-drop "
        "--security-opt --platform --pull --log-driver --log-opt --pid --uts --dns --expose --cidfile "
        "--stop-signal --stop-timeout --tmpfs --group-add --cpuset-cpus --health-cmd --health-interval "
        "--health-retries --health-timeout --health-start-period --network-alias --ip --oom-score-adj "
        "--storage-opt --sysctl --volumes-from --link -a --attach --cgroupns --cgroup-parent --userns "
        "--volume-driver --detach-keys",
    )
)
_FIELD = {
    "--publish": "docker.ports",
    "--volume": "docker.volumes",
    "--mount": "docker.volumes",
    "--env": "env",
    "--gpus": "gpus",
    "--shm-size": "docker.shm_size",
    "--name": "docker.container_name",
    "--ipc": "docker.ipc",
    "--runtime": "docker.runtime",
    "--restart": "docker.restart",
    "--entrypoint": "docker.entrypoint",
    "--user": "docker.user",
    "--workdir": "docker.working_dir",
    "--network": "docker.network",
    "--label": "docker.labels",
    "--ulimit": "docker.ulimits",
    "--tmpfs": "docker.tmpfs",
    "--log-driver": "docker.logging",
    "--log-opt": "docker.logging",
}
# Options that only say how to attach or clean up: the app decides those itself when it launches.
_SILENT = frozenset({"--rm", "--detach", "--interactive", "--tty", "--init", "--sig-proxy"})


def _volume(value: str, where: Location, pasted: _Pasted, warnings: list[str]) -> str:
    """A volume as the shell passes it to docker when the pasted line runs: ``$(pwd)`` / ``$PWD`` the
    folder the import runs in, ``$name`` from its environment (a ``$`` the shell passes as written is
    kept as written)."""
    if value in pasted.literal:
        return value
    secret = next((n for m in VAR_RE.finditer(value) if is_secret_name(n := m.group(1) or m.group(2))), None)
    if secret is not None:
        raise ImportFormatError(
            f"volume {value!r} names ${secret}: filled in, the secret would be stored in the profile as text",
            where=where,
            hint="write the folder to mount instead of the variable",
        )
    expanded, filled = expand_word(value, os.environ, pasted.cwd, where)
    if filled:
        warnings.append(
            f"{where}: {value!r} is mounted as a shell would when the line is pasted here: "
            f"{expanded!r} ({'; '.join(redact_secrets(f) for f in filled)})"
        )
    return expanded


def _gpus(value: str, where: Location, warnings: list[str]) -> Any:
    v = value.strip().strip("'\"")
    if v in ("all", "-1"):
        return "all"
    if v.isdigit():
        warnings.append(f"--gpus {v} read as GPUs {', '.join(map(str, range(int(v))))}")
        return tuple(range(int(v)))
    ids: list[str] = []
    for part in v.replace('"', "").split(","):
        key, eq, val = part.partition("=")
        if eq and key.strip() in ("device", "devices"):
            ids.append(val)
        elif eq and key.strip() == "count":
            return _gpus(val, where, warnings)
        elif not eq and ids:
            ids.append(part)
    try:
        return tuple(int(x) for x in ids) if ids else "all"
    except ValueError:
        raise ImportFormatError(
            f"--gpus {value!r}: GPU devices must be indices such as device=0,1 (UUIDs are not supported)",
            where=where,
        ) from None


def _mount(value: str) -> str | None:
    fields = dict(p.partition("=")[::2] for p in value.split(","))
    target = fields.get("target") or fields.get("dst") or fields.get("destination")
    if not target or fields.get("type") == "tmpfs":
        return None
    source = fields.get("source") or fields.get("src")
    ro = "readonly" in fields or "ro" in fields or fields.get("readonly") == "true"
    return ":".join([*([source] if source else []), target, *(["ro"] if ro else [])])


def _env_pair(word: str, where: Location, draft: Draft) -> None:
    key, eq, value = word.partition("=")
    checked_env_name(key, where)
    if eq:
        draft.env[key] = value
    elif is_secret_name(key):
        draft.env[key] = f"${{{key}}}"
    elif key in os.environ:
        draft.env[key] = os.environ[key]
    else:
        draft.warnings.append(f"{where}: {key} is passed through but not set here; left out")


def _docker_run(tokens: list[Token], i: int, draft: Draft, pasted: _Pasted) -> None:
    src = draft.source
    words = [w for w, _ in tokens]
    # global options before `run`: only the host matters
    while i < len(words) and words[i].startswith("-"):
        opt, _, attached = words[i].partition("=")
        value = attached or (words[i + 1] if i + 1 < len(words) else "")
        if opt in ("-H", "--host", "-c", "--context"):
            draft.meta.setdefault("host", value)
        i += 1 if attached else 2
    if words[i : i + 2] == ["container", "run"]:
        i += 1
    if i >= len(words) or words[i] != "run":
        raise ImportFormatError(
            "only 'docker run' commands can be imported",
            where=Location(src, tokens[min(i, len(tokens) - 1)][1]),
        )
    i += 1
    docker: dict[str, Any] = {}
    ports: list[str] = []
    volumes: list[str] = []
    entry: list[str] = []
    while i < len(words) and words[i].startswith("-"):
        word, line = tokens[i]
        if word[:2] in ("-p", "-v", "-e") and len(word) > 2:
            # attached, as Docker's CLI reads it: -eFOO=1 and -e-S=x are -e with the rest (-e=FOO=1 too)
            opt, value, eq = word[:2], word[3:] if word[2] == "=" else word[2:], "="
        else:
            opt, eq, value = word.partition("=")
        opt = _KEPT.get(opt, opt)
        if re.fullmatch(r"-[dit]+", opt) or opt in _SILENT:
            i += 1
            continue
        if opt not in _VALUE_OPTS:
            draft.warnings.append(f"line {line}: docker option {redact_secrets(opt)} is not kept")
            i += 1
            continue
        if not eq:
            if i + 1 >= len(words):
                raise ImportFormatError(f"{opt} needs a value", where=Location(src, line, opt))
            value = words[i + 1]
            i += 1
        i += 1
        where = Location(src, line, opt)
        if opt == "--publish":
            ports.append(value)
        elif opt == "--volume":
            volumes.append(
                warn_host_access(_volume(value, where, pasted, draft.warnings), draft.warnings, where)
            )
        elif opt == "--mount":
            mounted = _mount(_volume(value, where, pasted, draft.warnings))
            if mounted is None:
                draft.warnings.append(f"line {line}: --mount {value} is not kept (tmpfs or no target)")
            else:
                volumes.append(warn_host_access(mounted, draft.warnings, where))
        elif opt == "--env":
            _env_pair(value, where, draft)
        elif opt == "--gpus":
            draft.gpus = _gpus(value, where, draft.warnings)
        elif opt == "--env-file":
            draft.warnings.append(f"line {line}: --env-file {value} is not read; add the variables you need")
        elif opt == "--entrypoint":
            entry = [value] if value else []
        elif opt in ("--runtime", "--ipc", "--shm-size", "--name", "--restart", "--user", "--workdir"):
            names = {"--name": "container_name", "--shm-size": "shm_size", "--workdir": "working_dir"}
            docker[names.get(opt, opt[2:])] = value
        elif opt == "--network":
            docker["network"] = None if value in ("bridge", "default") else value
        elif opt == "--network-alias":
            docker["network_aliases"] = (*docker.get("network_aliases", ()), value)
        elif opt == "--label":
            key, _, val = value.partition("=")
            docker.setdefault("labels", {})[key] = val
        elif opt == "--ulimit":
            key, _, val = value.partition("=")
            docker.setdefault("ulimits", {})[key] = val
        elif opt == "--tmpfs":
            docker["tmpfs"] = (*docker.get("tmpfs", ()), value)
        elif opt == "--log-driver":
            docker.setdefault("logging", {"options": {}})["driver"] = value
        elif opt == "--log-opt":
            key, _, val = value.partition("=")
            docker.setdefault("logging", {"options": {}})["options"][key] = val
        else:
            draft.warnings.append(f"line {line}: docker option {redact_secrets(opt)} is not kept")
        if opt in _FIELD:
            draft.where[_FIELD[opt]] = where
    if i >= len(words):
        raise ImportFormatError("docker run without an image", where=Location(src, tokens[-1][1]))
    docker["image"] = words[i]
    draft.where["docker.image"] = Location(src, tokens[i][1], "image")
    command, command_where = words[i + 1 :], [Location(src, t[1]) for t in tokens[i + 1 :]]
    known_entry = draft.meta.get("entrypoint")
    full = entry + command
    full_where = [Location(src, tokens[i][1])] * len(entry) + command_where
    if isinstance(known_entry, list) and known_entry and full[: len(known_entry)] == known_entry:
        cut = len(known_entry)
        docker["entrypoint"] = tuple(full[:cut])
        draft.argv, draft.argv_where = full[cut:], full_where[cut:]
    else:
        launch = read_launch(entry, command, full_where, draft.warnings)
        docker["entrypoint"] = launch.entrypoint
        if launch.pre_start is not None:
            draft.meta = {**draft.meta, "pre_start": launch.pre_start}
        draft.argv, draft.argv_where = launch.argv, launch.argv_where
    docker["ports"], docker["volumes"] = tuple(ports), tuple(volumes)
    draft.docker = docker
    draft.name_hint = docker.get("container_name")


@dataclass(frozen=True)
class _Pasted:
    """Where the pasted line would run: the words whose ``$`` a shell passes as written, and the folder
    ``$(pwd)`` names."""

    literal: set[str]
    cwd: str


def read_cmdline(
    text: str, *, source: str | None, warnings: list[str] | None = None, cwd: str | None = None
) -> Draft:
    """Parse a ``docker run`` or ``vllm serve`` line into a :class:`Draft` (``warnings`` collects the
    warnings, kept by the caller when the import fails). ``cwd``: the folder a volume's ``$(pwd)`` /
    ``$PWD`` stands for (None: the folder the import runs in)."""
    warnings = [] if warnings is None else warnings
    literal: set[str] = set()
    tokens, meta = tokenize(text, source, warnings, literal)
    if not tokens:
        raise ImportFormatError("nothing to import: the text holds no command", where=Location(source, 1))
    assignments: list[Token] = []
    i = skip_prefix(tokens, assignments)
    words = [w for w, _ in tokens]
    if i < len(words) and PurePosixPath(words[i]).name in ("docker", "podman"):
        draft = Draft("docker-run", source, meta=dict(meta), warnings=warnings, file_meta=dict(meta))
        if assignments:
            warnings.append(
                "variables set before 'docker' reach the docker client, not the container; ignored"
            )
        _docker_run(tokens, i + 1, draft, _Pasted(literal, os.getcwd() if cwd is None else cwd))
    elif i < len(words) and (n := launcher_length(words, i)):
        draft = Draft("vllm-serve", source, meta=dict(meta), warnings=warnings, file_meta=dict(meta))
        for word, line in assignments:
            _env_pair(word, Location(source, line, word.partition("=")[0]), draft)
            draft.where.setdefault("env", Location(source, line))
        if n == 2:
            draft.executable = words[i]
        else:
            warnings.append(f"'{' '.join(words[i : i + n])}' is run as 'vllm serve' by the profile")
        draft.argv = words[i + n :]
        draft.argv_where = [Location(source, line) for _, line in tokens[i + n :]]
    else:
        line = tokens[min(i, len(tokens) - 1)][1]
        raise ImportFormatError(
            "not a compose file, a 'docker run' line or a 'vllm serve' line",
            where=Location(source, line),
            hint="paste a docker-compose.yml, a docker run … command or a vllm serve … command",
        )
    draft.where.setdefault("command", Location(source, tokens[min(i, len(tokens) - 1)][1]))
    values = [*draft.argv, *(draft.docker or {}).get("ports", ()), *(draft.docker or {}).get("volumes", ())]
    values += [v for k, v in draft.env.items() if not is_secret_name(k)]
    for value in values:
        if value in literal:
            continue  # quoted so that a shell passes it as written, as launch does: the same meaning
        if reference_name(value) is not None:
            shown = repr(redact_secrets(_DEFAULT_RE.sub(r"\1…}", value)))
            warnings.append(
                f"{shown}: filled in from your environment at launch (a shell would fill it in when the "
                "line runs)"
            )
        elif _SHELL_VAR_RE.search(value):
            # a default (${VLLM_API_KEY:-…}) may be the secret itself: never shown
            shown = _DEFAULT_RE.sub(r"\1…}", value)
            shown = repr(redact_secrets(shown))
            warnings.append(f"{shown}: shell variables are kept as written, not expanded")
    return draft
