"""The pure half of the Docker backend: a profile → ``containers.create`` kwargs and a ``docker run`` line.

Nothing here talks to a Docker engine, so a dry run (and its tests) needs none. The launch side lives
in :mod:`llm_dyno.core.runtime.docker_backend`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from docker.types import DeviceRequest

from llm_dyno.core.errors import DynoError, at
from llm_dyno.core.httpclient import server_url
from llm_dyno.core.profiles.exposure import exposure_of
from llm_dyno.core.profiles.model import HOOKS, DockerSettings, Profile
from llm_dyno.core.runtime.base import LaunchPlan, plan_key
from llm_dyno.core.runtime.docker_argv import _docker, docker_run_argv, hook_argvs
from llm_dyno.core.runtime.docker_common import (
    LABEL_HASH,
    LABEL_MANAGED,
    LABEL_PORT,
    LABEL_PROFILE,
    LABEL_SNAPSHOT,
    host_ip,
    is_url_host,
)
from llm_dyno.core.runtime.docker_contexts import default_host, find_context
from llm_dyno.core.runtime.docker_secrets import secret_files, secret_mounts
from llm_dyno.core.runtime.docker_volumes import image_mounts, volume_lines
from llm_dyno.core.runtime.launch_spec import ContainerSpec, PlanWarning, WarningKind, warnings_of
from llm_dyno.core.runtime.picked_port import PICKED_BY_DOCKER, PICKED_NOTE
from llm_dyno.core.secrets import (
    reference_name,
    require_secrets,
    resolve_reference,
    secret_reference_in,
    split_secret_flags,
)

DEFAULT_ENGINE_PORT = 8000
_BUILTIN_NETWORKS = ("host", "none", "bridge", "default")
# Log drivers `docker logs` can read back (the app follows the server's log through it).
_READABLE_LOG_DRIVERS = ("json-file", "local", "journald")


@dataclass(frozen=True)
class DockerLaunchPlan(LaunchPlan):
    """A :class:`LaunchPlan` whose ``spec`` is a :class:`ContainerSpec` (env left unresolved)."""

    docker_host: str | None = None  # None: the local engine / DOCKER_HOST / the active context

    def describe(self) -> str:
        """An equivalent ``docker run`` command line (secrets stay references, which a shell running
        the line fills in from the environment)."""
        from llm_dyno.core.profiles.exporters import shell_word

        spec = self.spec
        if not isinstance(spec, ContainerSpec):
            raise TypeError("a docker plan without a container spec")  # a bug: plan_container made it
        create = spec.for_engine(reveal=False)
        references = spec.reference_words()
        settings = self.profile.docker
        lines = [] if settings is None else volume_lines(settings, _docker(self.docker_host))
        lines += [
            " ".join(
                shell_word(w) if w in references or not _environment_or_command(w, create) else shlex.quote(w)
                for w in docker_run_argv(create, self.docker_host)
            )
        ]
        for what, argv in hook_argvs(spec, create, self.docker_host):
            lines += [f"# {what}:", " ".join(shell_word(w) for w in argv)]
        return "\n".join(lines)


def _environment_or_command(word: str, create: Mapping[str, Any]) -> bool:
    """Whether ``word`` is one of the container's ``KEY=VALUE`` words or a command argument: text the
    plan resolved (a shell must not expand it again), unless it is a secret's reference."""
    env = create.get("environment") or {}
    return word in {f"{k}={v}" for k, v in env.items()} or word in create.get("command", ())


def container_name(profile: Profile) -> str:
    """``docker.container_name`` or ``llm-dyno-<stem>`` where stem is the profile name made name-safe."""
    if profile.docker is not None and profile.docker.container_name:
        return profile.docker.container_name
    stem = re.sub(r"[^a-z0-9_.-]+", "-", profile.name.lower()).strip("-.") or "server"
    return f"llm-dyno-{stem}"


def _parse_port(mapping: str) -> tuple[str | None, str, str, str]:
    """``[ip:]host:container[/proto]`` → (ip, host_port, container_port, proto)."""
    spec, _, proto = mapping.partition("/")
    parts = spec.rsplit(":", 2)
    if len(parts) == 1:  # only a container port: docker picks a host port
        return None, "", parts[0], proto or "tcp"
    if len(parts) == 2:
        return None, parts[0], parts[1], proto or "tcp"
    ip = parts[0].strip("[]") or None
    return ip, parts[1], parts[2], proto or "tcp"


def _ports(settings: DockerSettings, warnings: list[PlanWarning]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    bare: list[str] = []
    for mapping in settings.ports:
        ip, host_port, ctr_port, proto = _parse_port(mapping)
        if "-" in ctr_port:
            warnings.append(
                PlanWarning(WarningKind.IGNORED, f"port range {mapping!r} is not supported; it is left out")
            )
            continue
        if ip is None and settings.bind == "loopback":
            # A vLLM server has no authentication unless --api-key: loopback unless the user chose.
            ip = "127.0.0.1"
            bare.append(mapping)
        # every interface (no address, or bind: file) is written as Docker Compose writes it: HostIp ""
        # a host range (6005-6015) for one container port stays a string: Docker picks a port in it
        port: int | str = int(host_port) if host_port.isdigit() else host_port
        binding: Any = (ip or "", port) if host_port else (ip or "",)
        key = f"{ctr_port}/{proto}"
        if key in out:
            prev = out[key]
            out[key] = [*(prev if isinstance(prev, list) else [prev]), binding]
        else:
            out[key] = binding
    if bare and settings.network != "host":  # host network: no port is published (exposure.py)
        warnings.append(
            PlanWarning(
                WarningKind.EXPOSURE,
                f"ports {', '.join(bare)} are published on 127.0.0.1 only (docker.bind: loopback), where "
                "Docker Compose and docker run would publish them on every interface; set docker.bind: file "
                "to publish them as written",
            )
        )
    return out


def _host_port(binding: Any) -> int | None:
    """The fixed host port of a binding (None: Docker picks one, also within a range)."""
    return binding[1] if binding is not None and len(binding) > 1 and isinstance(binding[1], int) else None


def _volumes(settings: DockerSettings, warnings: list[PlanWarning]) -> list[str]:
    """Binds as ``src:dst:mode`` strings, one per entry: the same host folder twice stays twice."""
    out: list[str] = []
    for i, entry in enumerate(settings.volumes):
        parts = entry.split(":")
        if len(parts) < 2 or (parts[0].startswith("/") and not parts[1].startswith("/")):
            if not parts[0].startswith("/"):
                raise DynoError(
                    f"volume {entry!r} needs a source and a target (src:dst[:ro]), or an absolute "
                    "container path alone (an anonymous volume)",
                    where=at(None, field=f"docker.volumes[{i}]"),
                )
            out.append(entry)  # an anonymous volume: Docker makes a new one for the container
            continue
        src, dst = os.path.expanduser(parts[0]), parts[1]
        mode = ":".join(parts[2:]) or "rw"
        if src.startswith("."):
            warnings.append(
                PlanWarning(
                    WarningKind.PATH, f"volume source {parts[0]!r} is relative; docker needs an absolute path"
                )
            )
        out.append(f"{src}:{dst}:{mode}")
    return out


def _network(settings: DockerSettings, spec: dict[str, Any], warnings: list[PlanWarning]) -> None:
    net = settings.network
    if net is None:
        return
    if net in _BUILTIN_NETWORKS or net.startswith(("container:", "service:")):
        spec["network_mode"] = net
        return
    spec["network"] = net
    if settings.network_aliases:
        from docker.types import EndpointConfig  # the docker SDK only where a network is joined

        spec["networking_config"] = {net: EndpointConfig("1.41", aliases=list(settings.network_aliases))}


def network_to_create(plan: LaunchPlan) -> tuple[str, dict[str, str]] | None:
    """The network a plan joins that the launch creates when it is missing, with its labels.

    A compose project's network gets the labels Docker Compose gives its own, so that ``docker compose
    up`` of the same project later finds it as its own.
    """
    net = plan.spec.network if isinstance(plan.spec, ContainerSpec) else None
    settings = plan.profile.docker
    if not net or settings is None:
        return None
    labels = {LABEL_MANAGED: "1"}
    project = settings.project
    if project and str(net).startswith(f"{project}_"):
        labels = {
            "com.docker.compose.project": project,
            "com.docker.compose.network": str(net)[len(project) + 1 :],
        }
    return str(net), labels


def _logging(settings: DockerSettings, spec: dict[str, Any], warnings: list[PlanWarning]) -> None:
    if settings.logging is None:
        return
    driver = settings.logging.driver or ""
    spec["log_config"] = {"Type": driver, "Config": dict(settings.logging.options)}
    if driver and driver not in _READABLE_LOG_DRIVERS:
        warnings.append(
            PlanWarning(
                WarningKind.LOGS,
                f"log driver {driver!r}: docker logs cannot read it back, so the app sees no server log "
                "(loading progress, failures) for this container",
            )
        )


def _extras(settings: DockerSettings, spec: dict[str, Any], warnings: list[PlanWarning]) -> None:
    """User, working directory, ulimits, network and log settings, as Docker Compose passes them."""
    if settings.user:
        spec["user"] = settings.user
    if settings.working_dir:
        spec["working_dir"] = settings.working_dir
    if settings.ulimits:
        from docker.types import Ulimit  # the docker SDK only where a container needs it

        limits = []
        for name, value in settings.ulimits.items():
            soft, _, hard = value.partition(":")
            limits.append(Ulimit(name=name, soft=int(soft), hard=int(hard or soft)))
        spec["ulimits"] = limits
    if settings.tmpfs:
        spec["tmpfs"] = {path: opts for path, _, opts in (t.partition(":") for t in settings.tmpfs)}
    _network(settings, spec, warnings)
    _logging(settings, spec, warnings)


def _device_requests(gpus: Any, settings: DockerSettings) -> list[DeviceRequest]:
    """The NVIDIA GPUs of ``gpus`` first, then every other request of ``docker.devices`` as written
    (Compose passes each to Docker: driver, count, device IDs, capabilities, options)."""
    if gpus is None and not settings.devices:
        return []
    from docker.types import DeviceRequest  # here: reading a plan's URL or GPUs needs no docker SDK

    out = []
    if gpus == "all":
        out.append(DeviceRequest(count=-1, capabilities=[["gpu"]]))
    elif gpus is not None:
        out.append(DeviceRequest(device_ids=[str(g) for g in gpus], capabilities=[["gpu"]]))
    for d in settings.devices:
        out.append(
            DeviceRequest(
                driver=d.driver or "",
                count=d.count or 0,
                device_ids=list(d.device_ids),
                capabilities=[list(d.capabilities)],
                options=dict(d.options),
            )
        )
    return out


def _entrypoint(profile: Profile, settings: DockerSettings) -> list[str] | None:
    if settings.entrypoint:
        return list(settings.entrypoint)
    if profile.pre_start:
        # "$@" after `--` is the container command: the model and flags, as with the stock entrypoint.
        return ["/bin/bash", "-c", profile.pre_start + '\nexec vllm serve "$@"', "--"]
    return None


def _scripts_with_secrets(profile: Profile, settings: DockerSettings) -> list[str]:
    """A note for each command of the profile's own that names a secret: the app passes it as
    written, but a shell in the container that expands it into a program's arguments puts the value
    in a command line (a container's processes are in the host's ``ps``) and perhaps in a log."""
    commands: list[tuple[str, Sequence[str]]] = [("docker.entrypoint", settings.entrypoint or ())]
    commands.append(("pre_start", (profile.pre_start,) if profile.pre_start else ()))
    for when in HOOKS:
        commands += [(f"docker.{when}[{i}]", hook.command) for i, hook in enumerate(getattr(settings, when))]
    notes = []
    for where, words in commands:
        ref = next((r for r in map(secret_reference_in, words) if r is not None), None)
        if ref is not None:
            notes.append(
                f"{where} refers to the secret {ref}: a shell that expands it into a command's "
                "arguments puts its value in that command line (the host's ps shows it); read it "
                "from the environment inside the program instead"
            )
    return notes


def _restart_policy(restart: str | None) -> dict[str, Any] | None:
    if not restart or restart == "no":
        return None
    name, _, count = restart.partition(":")
    policy: dict[str, Any] = {"Name": name}
    if count.isdigit():
        policy["MaximumRetryCount"] = int(count)
    return policy


def _image(image: str) -> str:
    """The image as Docker is asked for it: ``${VAR}`` resolved from the environment (as Compose
    resolves ``image: ${VAR}``), an escaped ``$${…}`` unescaped. An image name is no secret: every
    ``docker ps`` shows it, so plan shows it resolved."""
    if reference_name(image) is None and not image.startswith("$$"):
        return image
    value = resolve_reference(image, key="docker.image")
    if not value:
        raise DynoError(
            f"docker.image is {image}, which is not set",
            where=at(None, field="docker.image"),
            hint=f"export {reference_name(image)}=IMAGE before launching, or write the image in the profile",
        )
    return value


def plan_container(profile: Profile) -> DockerLaunchPlan:
    """Build the container for a profile without side effects. Raises a DynoError on bad input."""
    settings = profile.docker
    if settings is None:
        raise DynoError(
            f"profile {profile.name!r} has no 'docker' section",
            where=at(None, field="docker"),
            hint="add docker: {image: vllm/vllm-openai:<version>} or switch the profile to runtime: process",
        )
    warnings: list[PlanWarning] = []
    engine = profile.engine()
    engine_port = engine.port or DEFAULT_ENGINE_PORT
    ports = _ports(settings, warnings)
    binding = ports.get(f"{engine_port}/tcp")
    # of several bindings of the server's port, the first with a fixed host port is the one to call
    bindings = binding if isinstance(binding, list) else [binding]
    first = next((b for b in bindings if _host_port(b) is not None), bindings[0])
    if settings.network == "host":
        first = ("127.0.0.1", engine_port)  # the server listens on the host itself
    found_port = _host_port(first)
    if found_port is None and first is not None:
        found_port = PICKED_BY_DOCKER  # `- 8000` or a host range: Docker picks, launch reads it back
    if found_port is None:
        raise DynoError(
            f"no published port reaches the server's port {engine_port} in the container",
            where=at(None, field="docker.ports"),
            hint=f"add a mapping such as '{engine_port}:{engine_port}' (host:container)",
        )
    # (a port open to the network without a key is warned about by the exposure statement, below)
    bind_ip, host_port = host_ip(first) or "0.0.0.0", found_port  # noqa: S104
    remote = remote_engine_host(settings.host)  # DOCKER_HOST and docker contexts count too
    if remote and bind_ip.startswith("127."):
        warnings.append(
            PlanWarning(
                WarningKind.UNREACHABLE,
                f"port {host_port} is bound to {bind_ip} on {remote}, which this machine cannot reach; "
                f"publish it as 0.0.0.0:{host_port}:{engine_port} (open to that network) "
                "or use an SSH tunnel",
            )
        )
    if host_port == PICKED_BY_DOCKER:
        warnings.append(PlanWarning(WarningKind.PORT, PICKED_NOTE))
    url_host = remote or ("127.0.0.1" if bind_ip in ("0.0.0.0", "::") else bind_ip)  # noqa: S104

    # secrets go to the container's environment, never its command (docker inspect, the host's ps)
    command, secret_env = split_secret_flags(profile.vllm_argv())
    environment = {**profile.server_env(), **secret_env}
    warnings += warnings_of(WarningKind.SECRET, require_secrets(environment, list(secret_env)))
    warnings += warnings_of(WarningKind.SECRET, _scripts_with_secrets(profile, settings))
    spec: dict[str, Any] = {
        "image": _image(settings.image),
        "command": command,
        "name": container_name(profile),
        "labels": {
            **settings.labels,
            LABEL_MANAGED: "1",
            LABEL_PROFILE: profile.name,
            LABEL_HASH: profile.content_hash(),
            LABEL_PORT: str(host_port),  # 0: Docker picks it (read back from the container)
            LABEL_SNAPSHOT: json.dumps(profile.to_dict(), separators=(",", ":"), sort_keys=True),
        },
        # vLLM as PID 1 would ignore SIGTERM: docker's tini forwards it and reaps children.
        "init": True,
        "ports": ports,
    }
    entrypoint = _entrypoint(profile, settings)
    if entrypoint is not None:
        spec["entrypoint"] = entrypoint
    if environment:
        spec["environment"] = environment
    if any(k.startswith("llm-dyno.") for k in settings.labels):
        warnings.append(
            PlanWarning(
                WarningKind.IGNORED,
                "labels starting with llm-dyno. are the app's own; the file's values are replaced",
            )
        )
    volumes = _volumes(settings, warnings)
    if volumes:
        spec["volumes"] = volumes
    # compose secrets: file ones bound read-only, the others written; image volumes (Engine API 1.48)
    mounts = [*secret_mounts(settings), *image_mounts(settings)]
    if mounts:
        spec["mounts"] = mounts
    files = secret_files(settings, warnings)
    _extras(settings, spec, warnings)
    if settings.shm_size:
        spec["shm_size"] = str(settings.shm_size).replace(" ", "")
    if settings.ipc:
        spec["ipc_mode"] = settings.ipc
    requests = _device_requests(profile.gpus, settings)
    if requests:
        spec["device_requests"] = requests
    if settings.runtime:
        spec["runtime"] = settings.runtime
    policy = _restart_policy(settings.restart)
    if policy is not None:
        spec["restart_policy"] = policy
        warnings.append(
            PlanWarning(
                WarningKind.RESTART,
                f"restart policy {settings.restart!r}: docker restarts the server after it dies",
            )
        )
    if profile.gpus is None and not settings.runtime and not settings.devices:
        warnings.append(
            PlanWarning(
                WarningKind.GPU, "no GPUs requested: vLLM in the container will see none (set gpus: all)"
            )
        )
    gpus = tuple(profile.gpus) if isinstance(profile.gpus, tuple) else None
    key = plan_key(profile, secret_env)
    exposure = exposure_of(profile, remote, has_key=key is not None)
    warnings += tuple(warnings_of(WarningKind.EXPOSURE, exposure.warning_texts))
    return DockerLaunchPlan(
        profile=profile,
        runtime="docker",
        base_url=server_url(url_host, host_port),
        host_port=host_port,
        gpus=gpus,
        spec=ContainerSpec(
            spec,
            files,
            pre_start=settings.pre_start,
            post_start=settings.post_start,
            pre_stop=settings.pre_stop,
        ),
        warnings=tuple(warnings + warnings_of(WarningKind.ENGINE, engine.warnings)),
        docker_host=settings.host,
        exposure=exposure,
        key=key,
    )


def _remote_hostname(host: str | None) -> str | None:
    if not host or not is_url_host(host) or host.startswith(("unix://", "npipe://")):
        return None
    name = urlsplit(host).hostname
    return None if name in (None, "localhost", "127.0.0.1", "::1") else name


def remote_engine_host(host: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The machine a Docker host setting points at when it is not this one, else None.

    ``host`` is a profile's ``docker.host``: a URL, or the name of a docker context (its endpoint is
    looked up). None follows the engine ``docker.from_env()`` picks: DOCKER_HOST, else DOCKER_CONTEXT
    or the current docker context. Sockets (``unix://``, ``npipe://``) and ``tcp://`` / ``ssh://`` to
    localhost are this machine; so is a context that cannot be found (connecting would fail anyway).
    """
    env = os.environ if environ is None else environ
    url = host or default_host() or env.get("DOCKER_HOST") or None
    if url is None or not is_url_host(url):
        # a context that cannot be found: the launch reports it; GPUs are read locally meanwhile
        ctx = find_context(url or env.get("DOCKER_CONTEXT") or None, env)
        url = ctx.host if ctx is not None else None
    return _remote_hostname(url)
