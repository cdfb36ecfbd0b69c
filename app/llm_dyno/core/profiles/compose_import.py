"""Read the vLLM service of a docker-compose file into a profile draft, as Docker Compose reads it.

Compose semantics kept (see :mod:`~llm_dyno.core.profiles.compose_project`): interpolation from the
environment and the project's ``.env`` (secret references stay references), ``env_file:``, anchors and
merge keys, relative bind paths against the project folder, ``<project>_`` prefixes of named volumes and
networks, the project's default network (sibling services resolve the vLLM service by name), list and
mapping ``environment``, short and long ``ports`` / ``volumes``, GPUs from
``deploy.resources.reservations.devices`` or ``gpus:``, ``user``, ``working_dir``, ``labels``,
``ulimits``, ``logging``, ``secrets:`` (files at /run/secrets/) and ``configs:`` (at /NAME; see
:mod:`~llm_dyno.core.profiles.compose_secrets`), ``extends:`` (same file and another), ``!reset`` /
``!override``, ``profiles:`` (a service in no active profile is not chosen unless named),
``pre_start`` / ``post_start`` / ``pre_stop`` hooks (:mod:`~llm_dyno.core.profiles.compose_hooks`).
Other keys are named in warnings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.profiles.compose_extends import (
    Origin,
    ServiceSource,
    active,
    resolve_extends,
)
from llm_dyno.core.profiles.compose_hooks import read_hooks
from llm_dyno.core.profiles.compose_project import ComposeContext, choose_project
from llm_dyno.core.profiles.compose_secrets import read_secrets
from llm_dyno.core.profiles.compose_service import ServiceReader
from llm_dyno.core.profiles.compose_tags import strip_tags
from llm_dyno.core.profiles.import_common import META_KEY, Draft
from llm_dyno.core.profiles.launchers import read_launch
from llm_dyno.core.profiles.model import HOOKS
from llm_dyno.core.profiles.yamlio import line_for, load_with_lines

_HANDLED = frozenset(
    {"image", "container_name", "restart", "ports", "volumes", "environment", "env_file", "shm_size", "ipc"}
    | {"runtime", "gpus", "deploy", "entrypoint", "command", "user", "working_dir", "labels", "ulimits"}
    | {"logging", "networks", "network_mode", "tmpfs", "secrets", "configs", *HOOKS}
)


def _runs_vllm(svc: Any) -> bool:
    if not isinstance(svc, dict):
        return False
    words = " ".join(
        " ".join(map(str, v)) if isinstance(v, list) else str(v)
        for v in (svc.get("image", ""), svc.get("entrypoint", ""), svc.get("command", ""))
    )
    command = svc.get("command")
    command_words = command if isinstance(command, list) else str(command or "").split()
    starts_with_serve = bool(command_words) and str(command_words[0]) == "serve"
    return (
        "vllm" in str(svc.get("image", "")).lower()
        or starts_with_serve
        or any(k in words for k in ("vllm serve", "--model", "vllm.entrypoints"))
    )


def _readable(name: str, here: ServiceSource, project: Path | None, where: Location) -> Any:
    """A service as far as choosing goes: its extends applied when that can be done, tags read."""
    try:
        return strip_tags(resolve_extends(name, here, project, where))
    except ImportFormatError:
        return strip_tags(here.services[name])  # the error is said if this service is the one imported


def _choose_service(
    services: dict[str, Any], every: dict[str, Any], wanted: str | None, where: Location
) -> str:
    """The service to import: ``wanted`` (any service, as ``docker compose up NAME`` starts one whose
    profile is inactive), else the one of the started ``services`` that runs vLLM."""
    names = ", ".join(map(str, every)) or "none"
    if wanted is not None:
        if wanted not in every:
            raise ImportFormatError(
                f"no service '{wanted}' in this compose file (services: {names})",
                where=where,
                hint="use --service NAME",
            )
        return wanted
    found = [str(n) for n, s in services.items() if _runs_vllm(s)]
    if len(found) == 1:
        return found[0]
    if not found and len(services) == 1:
        return next(iter(services))  # the only service there is (its image may be named by a variable)
    if not found:
        raise ImportFormatError(
            f"no service runs vLLM (services: {names})",
            where=where,
            hint="name the vLLM service with --service NAME",
        )
    raise ImportFormatError(
        f"several services run vLLM: {', '.join(found)}", where=where, hint="choose one with --service NAME"
    )


def _docker_fields(s: ServiceReader, svc: dict[str, Any]) -> dict[str, Any]:
    docker: dict[str, Any] = {"image": s.value(svc["image"], "image")}
    for key in ("container_name", "shm_size", "ipc", "runtime", "restart", "user", "working_dir"):
        if svc.get(key) is not None:
            value = svc[key]
            # YAML reads an unquoted `restart: no` as false
            docker[key] = "no" if key == "restart" and value is False else s.text(value, key)
    docker["ports"] = tuple(m for p, i in s.items("ports") for m in s.ports(p, i))
    if str(docker.get("ipc", "")).startswith("service:"):
        raise ImportFormatError(
            f"ipc: {docker['ipc']} shares the IPC namespace of another service, which LLM Dyno does not "
            "start (it runs one service)",
            where=s.at("ipc"),
            hint="use ipc: host or ipc: shareable, or container:NAME of a container that is running",
        )
    docker["volumes"] = tuple(v for v in (s.volume(x, i) for x, i in s.items("volumes")) if v is not None)
    raw_tmpfs = svc.get("tmpfs")
    written = [raw_tmpfs] if isinstance(raw_tmpfs, str) else (raw_tmpfs or [])
    docker["tmpfs"] = tuple(s.text(t, "tmpfs") for t in written) + tuple(s.tmpfs_mounts)
    docker["image_volumes"] = tuple(s.image_volumes)  # mounted on Docker Engine 28+ (checked at launch)
    docker["driver_volumes"] = tuple(s.driver_volumes.values())  # created by the launch, as Compose does
    docker["labels"] = s.mapping("labels")
    docker["ulimits"] = s.ulimits()
    docker["logging"] = s.logging()
    docker["network"], docker["network_aliases"] = s.network()
    docker["project"] = s.ctx.project
    docker["secrets"] = read_secrets(s)
    for when in HOOKS:
        docker[when] = read_hooks(s, when)
    return {k: v for k, v in docker.items() if v not in (None, {}, ())}


def _deploy_not_kept(s: ServiceReader, deploy: Any) -> list[str]:
    """What of ``deploy:`` the profile does not keep (it keeps the GPU device requests), each named:
    limits, other reservations, replicas (LLM Dyno runs one container), restart and update policies."""
    if not isinstance(deploy, dict):
        return []
    out = []
    for key, value in deploy.items():
        if key == "replicas" and str(value) not in ("0", "1"):
            out.append(f"{s.at('deploy', key)}: {value} replicas: LLM Dyno runs one container of the server")
        elif key == "resources" and isinstance(value, dict):
            for part, entries in value.items():
                if part == "reservations" and isinstance(entries, dict):
                    out += [
                        f"{s.at('deploy', key, part, k)}: not kept by LLM Dyno (it keeps the GPU requests)"
                        for k in entries
                        if k != "devices"
                    ]
                else:
                    out.append(f"{s.at('deploy', key, part)}: not kept by LLM Dyno")
        elif key != "replicas":
            out.append(f"{s.at('deploy', key)}: not kept by LLM Dyno")
    return out


def _refuse_provider_dependency(s: ServiceReader, svc: dict[str, Any], services: dict[str, Any]) -> None:
    """A dependency on a ``provider:`` service: Compose runs the provider at ``up`` and passes the
    variables it gives into this container (docker/compose e2e providers_test.go), which a launch
    without the provider would silently lack."""
    needs = svc.get("depends_on")
    for dep in needs if isinstance(needs, (list, dict)) else ():
        other = services.get(str(dep))
        if isinstance(other, dict) and isinstance(other.get("provider"), dict):
            kind = other["provider"].get("type", "?")
            raise ImportFormatError(
                f"depends on '{dep}', a provider service (type {kind}): at up Compose runs the "
                f"provider's plugin binary (docker-{kind} or {kind} on the PATH; without it Compose fails "
                "too) and passes the variables it gives into this container; LLM Dyno runs no provider "
                "plugins",
                where=s.at("depends_on"),
                hint="set those variables under environment: and remove the dependency",
            )


def read_compose(
    text: str,
    *,
    source: str | None,
    service: str | None,
    base_dir: Path | None = None,
    warnings: list[str] | None = None,
    env_file_outside: bool = False,
) -> Draft:
    """Parse compose text and read its vLLM service into a :class:`Draft`.

    ``base_dir`` is the project folder (the compose file's): its ``.env`` feeds interpolation, relative
    paths resolve against it and its name is the project name. Pasted text has none. ``warnings``
    collects the warnings (kept by the caller when the import fails). ``env_file_outside``: the user
    allows ``env_file:`` entries outside the project folder (still never under /proc, /sys, /dev, nor a
    FIFO or a device).
    """
    try:
        data, lines = load_with_lines(text, source)
    except ProfileError as exc:
        raise ImportFormatError(exc.message, where=exc.where, hint=exc.hint) from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        raise ImportFormatError(
            "not a compose file: no 'services:' mapping with at least one service",
            where=Location(source, line_for(lines, ("services",)) or 1, "services"),
        )
    # a service called 1175872 is read by YAML as a number; compose names are strings
    services = {str(k): v for k, v in services.items()}
    data = {**data, "services": services}
    meta = data.get(META_KEY)
    if service is None and isinstance(meta, dict) and meta.get("service") in services:
        service = str(meta["service"])  # our own export names its service
    warnings = [] if warnings is None else warnings
    ctx = ComposeContext.load(base_dir, warnings)
    ctx.env_files_anywhere = env_file_outside
    here = ServiceSource(services, base_dir, source, lines)
    services_where = Location(source, line_for(lines, ("services",)), "services")
    profiles = {p.strip() for p in ctx.variables.get("COMPOSE_PROFILES", "").split(",") if p.strip()}
    started = {
        n: _readable(n, here, base_dir, services_where) for n, s in services.items() if active(s, profiles)
    }
    name = _choose_service(started, services, service, services_where)
    draft = Draft("compose", source, service=name, name_hint=name)
    draft.warnings = warnings
    draft.unset = ctx.unset
    if isinstance(meta, dict) and meta.get("service", name) == name:
        draft.meta, draft.file_meta = meta, dict(meta)
    ctx.project = choose_project(ctx, data.get("name"), Location(source, line_for(lines, ("name",)), "name"))
    if draft.meta.get("project"):
        ctx.project = str(draft.meta["project"])  # our own export: the project the profile came from
    # extends (same file or another) applied, !reset / !override read: the service as Compose runs it
    chain: list[Origin] = []  # the services extended: a key they brought is reported at their line
    svc = strip_tags(
        resolve_extends(
            name, here, base_dir, Location(source, line_for(lines, ("services", name))), chain=chain
        )
    )
    data = strip_tags(data)
    s = ServiceReader(name, svc if isinstance(svc, dict) else {}, lines, draft, ctx, data, chain)
    if not isinstance(svc, dict) or "image" not in svc:
        raise ImportFormatError(
            f"service '{name}' has no image",
            where=s.at("image"),
            hint="build the image first and name it in image:",
        )
    for key in svc:
        if key not in _HANDLED:
            draft.warnings.append(f"{s.at(key)}: not kept by LLM Dyno")
    draft.warnings += _deploy_not_kept(s, svc.get("deploy"))
    _refuse_provider_dependency(s, svc, services)

    docker = _docker_fields(s, svc)
    if isinstance(draft.meta.get("network_aliases"), list) and docker.get("network"):
        docker["network_aliases"] = tuple(str(a) for a in draft.meta["network_aliases"])
    entry, entry_where = s.tokens("entrypoint")
    command, command_where = s.tokens("command")
    launch = read_launch(entry, command, entry_where + command_where, draft.warnings)
    if launch.entrypoint is not None:
        docker["entrypoint"] = launch.entrypoint
    if launch.pre_start is not None:
        draft.meta = {**draft.meta, "pre_start": launch.pre_start}
    draft.argv, draft.argv_where = launch.argv, launch.argv_where
    if not draft.argv:
        raise ImportFormatError(
            "no vllm serve arguments found in entrypoint/command" + draft.unset_note(),
            where=s.at("command"),
            hint='if they sit inside a shell script, end the script with exec vllm serve "$@" '
            "and list the arguments under command:",
        )
    draft.docker = docker
    draft.env = s.environment()
    draft.gpus = s.gpus()
    if s.devices:  # every other device request, kept as written (Compose passes each to Docker)
        docker["devices"] = tuple(s.devices)
    draft.where = {
        **{f"docker.{k}": s.at(k) for k in docker},
        "docker.image": s.at("image"),
        "env": s.at("environment"),
        "gpus": s.at("gpus") if "gpus" in svc else s.at("deploy"),
        "command": s.at("command"),
        "name": Location(source, None, "name"),
    }
    return draft
