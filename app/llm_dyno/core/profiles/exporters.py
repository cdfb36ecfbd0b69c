"""Write a profile back out as a docker-compose file, a ``docker run`` line or a ``vllm serve`` line.

Each export imports back to an equal profile: what the format has no place for (name, notes, power
limit, reference numbers, Docker host) travels in an ``x-llm-dyno`` extension key (compose ignores
``x-`` keys) or a ``# llm-dyno: {json}`` comment line. Secrets stay references.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from llm_dyno.core.errors import Location, ProfileError
from llm_dyno.core.profiles.import_common import META_COMMENT, META_KEY, loopback_port, safe_name
from llm_dyno.core.profiles.launchers import split_launch
from llm_dyno.core.profiles.model import HOOKS, DockerSettings, Profile, Runtime
from llm_dyno.core.profiles.volume_exports import (
    compose_declaration,
    compose_image_volumes,
    docker_run_mounts,
)
from llm_dyno.core.profiles.yamlio import dump
from llm_dyno.core.secrets import is_reference, is_secret_name, resolve_reference

__all__ = ["to_compose", "to_docker_run", "to_vllm_serve"]

# A reference the shell should expand at launch: safe inside double quotes.
_EXPANDABLE_RE = re.compile(r'^\$(\{[A-Za-z_][A-Za-z0-9_]*(:?-[^}"`\\$]*)?\}|[A-Za-z_][A-Za-z0-9_]*)$')
_SERVICE_KEY_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*$")


def _secret_ref(value: str) -> bool:
    """A reference to a secret-looking variable (``${VLLM_API_KEY}``): exported so that running the
    export reads the variable, never as the literal text."""
    m = _EXPANDABLE_RE.match(value)
    return bool(m) and is_secret_name(re.split(r"[:}-]", value.lstrip("${"), maxsplit=1)[0])


def _holds_secret_ref(word: str) -> bool:
    """``${VLLM_API_KEY}`` or ``--api-key=${VLLM_API_KEY}``."""
    return _secret_ref(word) or ("=" in word and _secret_ref(word.partition("=")[2]))


def _published(docker: DockerSettings) -> list[str]:
    """The ports as the app publishes them (loopback for those without an address, unless bind: file)."""
    if docker.bind == "file":
        return list(docker.ports)
    return [loopback_port(p) for p in docker.ports]


def _docker(profile: Profile, what: str) -> DockerSettings:
    if profile.runtime is not Runtime.DOCKER or profile.docker is None:
        raise ProfileError(
            f"profile '{profile.name}' runs as a local process; it has no container to export as {what}",
            where=Location(None, None, "runtime"),
            hint="export it as a vllm serve line instead",
        )
    return profile.docker


def _meta(profile: Profile, *, carries_gpus: bool, carries_host: bool) -> dict[str, Any]:
    """Profile fields the target format cannot express."""
    data = profile.to_dict()
    meta: dict[str, Any] = {"name": profile.name, "notes": profile.notes}
    for key in ("power", "reference", "pre_start"):
        if key in data:
            meta[key] = data[key]
    if profile.docker is not None and profile.docker.host and not carries_host:
        meta["host"] = profile.docker.host
    if profile.runtime is Runtime.PROCESS and profile.process is not None and profile.process.cwd:
        meta["cwd"] = profile.process.cwd
    if not carries_gpus and profile.gpus is not None:
        meta["gpus"] = profile.gpus if profile.gpus == "all" else list(profile.gpus)
    docker = profile.docker
    if docker is not None and profile.runtime is Runtime.DOCKER:
        if docker.bind == "file":
            meta["bind"] = "file"
        elif _published(docker) != list(docker.ports):
            meta["ports"] = list(docker.ports)  # the ports as the profile writes them
        if docker.project:
            meta["project"] = docker.project
    return meta


def _escape(value: str) -> str:
    """Compose interpolates ``$``: double it so the value arrives as written."""
    return value.replace("$", "$$")


def _escape_resolved(value: str) -> str:
    """A value the launch resolves (image, environment, command) as Compose gets the same: a reference
    (``${A}``) stays one; a literal, including an escaped one (``$${foo}``, the text ``${foo}``), has
    its ``$`` doubled."""
    if is_reference(value):
        return value
    return _escape(resolve_reference(value) or "")


def _named_volumes(docker: DockerSettings) -> dict[str, Any]:
    """Top-level declarations of the named volumes, under their engine names (no prefix added)."""
    out: dict[str, Any] = {}
    for entry in docker.volumes:
        source = entry.split(":")[0]
        if source and not source.startswith((".", "/", "~")):
            out[_escape(source)] = compose_declaration(docker, source, _escape)  # with its driver, if any
    return out


def _compose_network(docker: DockerSettings, key: str, service: dict[str, Any]) -> dict[str, Any]:
    """Service network keys, and the top-level ``networks:`` the export needs."""
    net = docker.network
    if net is None or net in ("host", "none") or net.startswith("container:"):
        service["network_mode"] = _escape(net or "bridge")  # Docker's default bridge, as the app does
        return {}
    extra = [a for a in docker.network_aliases if a != key]
    if extra:
        service["networks"] = {"default": {"aliases": [_escape(a) for a in extra]}}
    return {"default": {"name": _escape(net)}}


def to_compose(profile: Profile) -> str:
    """A compose document with one service that launches the profile (GPUs as a device reservation).

    Ports are written as the app publishes them; named volumes and the network are declared under
    their engine names, so Docker Compose runs the same container wherever the file is put.
    """
    docker = _docker(profile, "a compose file")
    service: dict[str, Any] = {"image": _escape_resolved(docker.image)}
    if docker.container_name:
        service["container_name"] = _escape(docker.container_name)
    if docker.restart:
        service["restart"] = _escape(docker.restart)
    if docker.runtime:
        service["runtime"] = _escape(docker.runtime)
    if docker.ports:
        service["ports"] = [_escape(p) for p in _published(docker)]
    if docker.volumes or docker.image_volumes:
        service["volumes"] = [_escape(v) for v in docker.volumes] + compose_image_volumes(docker, _escape)
    if profile.env:
        # secret references are kept as written on import, so they are written unescaped
        service["environment"] = [
            f"{k}={v if is_secret_name(k) else _escape_resolved(v)}" for k, v in profile.env.items()
        ]
    if docker.shm_size:
        service["shm_size"] = _escape(docker.shm_size)
    if docker.ipc:
        service["ipc"] = _escape(docker.ipc)
    for key in ("user", "working_dir"):
        if getattr(docker, key):
            service[key] = _escape(getattr(docker, key))
    if docker.labels:
        service["labels"] = {k: _escape(v) for k, v in docker.labels.items()}
    if docker.tmpfs:
        service["tmpfs"] = [_escape(t) for t in docker.tmpfs]
    if docker.ulimits:
        service["ulimits"] = {
            k: int(v) if ":" not in v else dict(zip(("soft", "hard"), map(int, v.split(":")), strict=True))
            for k, v in docker.ulimits.items()
        }
    if docker.logging is not None:
        logging: dict[str, Any] = {"driver": docker.logging.driver} if docker.logging.driver else {}
        logging["options"] = {k: _escape(v) for k, v in docker.logging.options.items()}
        service["logging"] = logging
    devices: list[dict[str, Any]] = []
    if profile.gpus is not None:
        device: dict[str, Any] = {"driver": "nvidia"}
        if profile.gpus == "all":
            device["count"] = "all"
        else:
            device["device_ids"] = [str(g) for g in profile.gpus]
        device["capabilities"] = ["gpu"]
        devices.append(device)
    for other in docker.devices:  # every other request, as written
        written: dict[str, Any] = {"driver": _escape(other.driver)} if other.driver else {}
        if other.device_ids:
            written["device_ids"] = [_escape(i) for i in other.device_ids]
        elif other.count is not None:
            written["count"] = "all" if other.count == -1 else other.count
        written["capabilities"] = [_escape(c) for c in other.capabilities]
        if other.options:
            written["options"] = {k: _escape(v) for k, v in other.options.items()}
        devices.append(written)
    if devices:
        service["deploy"] = {"resources": {"reservations": {"devices": devices}}}
    if docker.entrypoint is not None:
        service["entrypoint"] = [_escape(t) for t in docker.entrypoint]
    service["command"] = [t if _holds_secret_ref(t) else _escape_resolved(t) for t in profile.vllm_argv()]
    key = safe_name(profile.name).replace(" ", "-").replace("+", "-")
    if docker.network_aliases and _SERVICE_KEY_RE.match(docker.network_aliases[0]):
        key = docker.network_aliases[0]  # the service's name on its network, as in the original file
    networks = _compose_network(docker, key, service)
    meta = {"service": key, **_meta(profile, carries_gpus=True, carries_host=False)}
    if networks and docker.network_aliases[:1] != (key,):
        # Compose would add the service's name as an alias: the profile's own list says it has none
        meta["network_aliases"] = list(docker.network_aliases)
    for when in HOOKS:
        hooks = [h.model_dump(exclude_defaults=True) for h in getattr(docker, when)]
        for hook in hooks:
            hook["command"] = [_escape(c) for c in hook["command"]]  # run as written, nothing filled in
            if "image" in hook:
                hook["image"] = _escape(hook["image"])  # used as written, like the command
            if "environment" in hook:
                env = hook["environment"]
                hook["environment"] = {k: v if is_secret_name(k) else _escape(v) for k, v in env.items()}
        if hooks:
            service[when] = hooks
    secrets = _compose_secrets(docker, service)
    configs = _compose_configs(docker, service)
    doc: dict[str, Any] = {META_KEY: meta, "services": {key: service}}
    if secrets:
        doc["secrets"] = secrets
    if configs:
        doc["configs"] = configs
    if _named_volumes(docker):
        doc["volumes"] = _named_volumes(docker)
    if networks:
        doc["networks"] = networks
    return dump(doc)


def _compose_secrets(docker: DockerSettings, service: dict[str, Any]) -> dict[str, Any]:
    """The profile's secrets as the service's ``secrets:`` (long form, absolute targets) and the
    top-level declarations they name (a file, or the variable's name: never a value)."""
    declared: dict[str, Any] = {}
    listed: list[dict[str, Any]] = []
    for secret in (s for s in docker.secrets if s.content is None):
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", secret.target.rsplit("/", 1)[-1]) or "secret"
        name, n = stem, 1
        while name in declared:
            n += 1
            name = f"{stem}_{n}"
        declared[name] = (
            {"file": _escape(secret.file)} if secret.file is not None else {"environment": secret.environment}
        )
        entry: dict[str, Any] = {"source": name, "target": _escape(secret.target)}
        entry |= {k: str(getattr(secret, k)) for k in ("uid", "gid") if getattr(secret, k) is not None}
        if secret.mode is not None:
            entry["mode"] = f"0{secret.mode:o}"  # a string: compose-go and the importer read it as octal
        listed.append(entry)
    if listed:
        service["secrets"] = listed
    return declared


def _compose_configs(docker: DockerSettings, service: dict[str, Any]) -> dict[str, Any]:
    """The profile's inline-content configs as the service's ``configs:`` (long form, absolute
    targets) and their top-level ``content:`` declarations (``$`` escaped: Compose interpolates it)."""
    declared: dict[str, Any] = {}
    listed: list[dict[str, Any]] = []
    for n, config in enumerate(s for s in docker.secrets if s.content is not None):
        name = f"config_{n + 1}"
        declared[name] = {"content": _escape(config.content or "")}
        entry: dict[str, Any] = {"source": name, "target": _escape(config.target)}
        entry |= {k: str(getattr(config, k)) for k in ("uid", "gid") if getattr(config, k) is not None}
        if config.mode is not None:
            entry["mode"] = f"0{config.mode:o}"
        listed.append(entry)
    if listed:
        service["configs"] = listed
    return declared


def _shell_value(value: str) -> str:
    """A value for a shell line that gives what launch gives: a reference in double quotes (the shell
    fills it in, as launch does), an escaped literal (``$${foo}``, the text ``${foo}``) as that text in
    single quotes, anything else quoted literally."""
    if _EXPANDABLE_RE.match(value):
        return f'"{value}"'
    return shlex.quote(resolve_reference(value) or "" if value.startswith("$$") else value)


def _quote_env(key: str, value: str) -> str:
    return f"{key}={_shell_value(value)}"  # a reference in double quotes: the shell fills it in at launch


def shell_word(value: str) -> str:
    """One word (an argument, KEY=VALUE) for a shell line that gives what launch gives: a reference in
    double quotes (expanded at launch), an escaped literal as its text, anything else quoted literally."""
    if _EXPANDABLE_RE.match(value) or value.startswith("$$"):
        return _shell_value(value)
    head, eq, ref = value.partition("=")
    if eq and (_EXPANDABLE_RE.match(ref) or ref.startswith("$$")):  # --api-key=${VLLM_API_KEY}
        return f"{shlex.quote(head)}={_shell_value(ref)}"
    return shlex.quote(value)


def _quote_path(value: str) -> str:
    """A volume for the shell: a leading ``~/`` left unquoted so that the shell expands it."""
    if value.startswith("~/"):
        return "~/" + shlex.quote(value[2:])
    return shlex.quote(value)


def _groups(tokens: list[str]) -> list[list[str]]:
    """One flag and its value per group, for a line per flag."""
    groups: list[list[str]] = []
    for token in tokens:
        if not groups or token.startswith("-"):
            groups.append([])
        groups[-1].append(token)
    return groups


_LONG = {"-H": "--host", "-p": "--publish", "-v": "--volume", "-e": "--env"}


def _option(flag: str, word: str) -> list[str]:
    """A docker option and its (quoted) value: one word ``--flag=value`` when the value starts with
    ``-``, so that no reader of the line can take the value for an option of its own."""
    if word.lstrip("'\"").startswith("-"):
        return [f"{_LONG.get(flag, flag)}={word}"]
    return [flag, word]


def _lines(head: list[str], options: list[list[str]], tail: list[str]) -> str:
    parts = [" ".join(head)] + [" ".join(o) for o in options] + [" ".join(g) for g in _groups(tail)]
    return " \\\n  ".join(parts)


def to_docker_run(profile: Profile) -> str:
    """A ``docker run`` command (one logical line, ``\\`` continuations) that launches the profile."""
    docker = _docker(profile, "a docker run line")
    hooked = [when for when in HOOKS if getattr(docker, when)]
    if hooked:
        raise ProfileError(
            f"profile '{profile.name}' has compose lifecycle hooks ({' / '.join(hooked)}), which docker "
            "run has no option for",
            where=Location(None, None, f"docker.{hooked[0]}"),
            hint="export it as a compose file instead",
        )
    if docker.secrets:
        raise ProfileError(
            f"profile '{profile.name}' has compose secrets (files at "
            f"{', '.join(s.target for s in docker.secrets)}), which docker run has no option for",
            where=Location(None, None, "docker.secrets"),
            hint="export it as a compose file instead",
        )
    if docker.devices:
        raise ProfileError(
            f"profile '{profile.name}' has device requests besides its GPUs (drivers "
            f"{', '.join(sorted({d.driver or 'nvidia' for d in docker.devices}))}), which this docker run "
            "line does not write",
            where=Location(None, None, "docker.devices"),
            hint="export it as a compose file instead",
        )
    q = shlex.quote
    head = ["docker", *(_option("-H", q(docker.host)) if docker.host else []), "run"]
    options: list[list[str]] = []
    if docker.container_name:
        options.append(_option("--name", q(docker.container_name)))
    if docker.restart:
        options.append(_option("--restart", q(docker.restart)))
    if docker.runtime:
        options.append(_option("--runtime", q(docker.runtime)))
    if profile.gpus is not None:
        gpus = "all" if profile.gpus == "all" else q('"device=' + ",".join(map(str, profile.gpus)) + '"')
        options.append(_option("--gpus", gpus))
    if docker.ipc:
        options.append(_option("--ipc", q(docker.ipc)))
    if docker.shm_size:
        options.append(_option("--shm-size", q(docker.shm_size)))
    if docker.user:
        options.append(_option("--user", q(docker.user)))
    if docker.working_dir:
        options.append(_option("--workdir", q(docker.working_dir)))
    if docker.network:
        options.append(_option("--network", q(docker.network)))
    options += [_option("--network-alias", q(a)) for a in docker.network_aliases]
    options += [_option("--label", q(f"{k}={v}")) for k, v in docker.labels.items()]
    options += [_option("--ulimit", q(f"{k}={v}")) for k, v in docker.ulimits.items()]
    options += [_option("--tmpfs", q(t)) for t in docker.tmpfs]
    if docker.logging is not None:
        if docker.logging.driver:
            options.append(_option("--log-driver", q(docker.logging.driver)))
        options += [_option("--log-opt", q(f"{k}={v}")) for k, v in docker.logging.options.items()]
    options += [_option("-p", q(p)) for p in _published(docker)]
    options += [
        _option(flag, _quote_path(v) if flag == "-v" else q(v)) for flag, v in docker_run_mounts(docker)
    ]
    options += [_option("-e", _quote_env(k, v)) for k, v in profile.env.items()]
    entry = list(docker.entrypoint or ())
    argv = profile.vllm_argv()
    meta = _meta(profile, carries_gpus=True, carries_host=True)
    if entry:
        options.append(_option("--entrypoint", q(entry[0])))
        if split_launch(entry[:1], entry[1:] + argv) != len(entry):
            meta["entrypoint"] = entry  # the split is not evident from the line: say where it is
    head_n = 2 if profile.model_flag else 1  # the model stays on the image's line
    options.append([q(docker.image), *(shell_word(t) for t in entry[1:] + argv[:head_n])])
    tail = [shell_word(t) for t in argv[head_n:]]
    return f"{META_COMMENT} {json.dumps(meta)}\n" + _lines(head, options, tail) + "\n"


def _command_word(executable: str) -> str:
    """The executable as the first word of a shell command: quoted whole when the shell would read it
    as an assignment (``A=b``; shlex leaves ``=`` bare, and a quoted word is never one)."""
    word = shlex.quote(executable)
    if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
        return "'" + executable + "'"  # shlex left it bare: it holds no quote
    return word


def to_vllm_serve(profile: Profile) -> str:
    """A shell line that runs the profile as a local process: env assignments, then ``vllm serve``."""
    executable = profile.process.executable if profile.process is not None else "vllm"
    env = [_quote_env(k, v) for k, v in profile.env.items()]
    meta = _meta(profile, carries_gpus=False, carries_host=True)
    argv = [shell_word(t) for t in profile.vllm_argv()]
    head_n = 2 if profile.model_flag else 1
    command = [_command_word(executable), "serve", *argv[:head_n]]
    if any(not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in profile.env):
        # a name a shell cannot assign (VAR.WITH.DOTS): env(1) sets it; "--" ends env's options, so
        # that no assignment is read as one (GNU and busybox env take it)
        env = ["env", "--", *env]
    if env[:1] == ["env"] and "=" in executable:
        # env(1) takes every word with "=" before the command for one more assignment
        raise ProfileError(
            f"the executable {executable!r} holds '=', which env reads as an assignment",
            where=Location(None, None, "process.executable"),
            hint="rename or link the executable to a path without '='",
        )
    first = env[:2] if env[:1] == ["env"] else env[:1]
    lines = _lines(
        first or command, [[e] for e in env[len(first) :]] + ([command] if env else []), argv[head_n:]
    )
    return f"{META_COMMENT} {json.dumps(meta)}\n" + lines + "\n"
