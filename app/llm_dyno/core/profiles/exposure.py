"""Where a profile's server really listens, and whether that is open to the network without a key.

The one answer the plan, the launch and Diagnostics all give: a Docker port mapping without an
address (``8020:8000``, which Docker Compose publishes on every interface) is published on
127.0.0.1 by this app; ``--host`` left out of a process profile becomes 127.0.0.1; ``0.0.0.0``,
``::`` or any address that is not loopback is reachable from other machines. A server reachable
from the network with no ``--api-key`` serves anyone who finds it.

Under ``network: host`` Docker publishes no port at all (``ports`` are ignored): vLLM listens on the
host's own interfaces, on its ``--host`` (0.0.0.0 when left out, vLLM's default in a container).
A mount that hands the container the host (the engine's socket, ``/``, ``/etc``, … see
:mod:`llm_dyno.core.profiles.host_access`) is named with the exposure too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from llm_dyno.core.profiles.host_access import host_mount_warnings, host_network_warning
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.secrets import split_secret_flags

LOOPBACK_DEFAULT = "127.0.0.1"
_ALL = {"", "0.0.0.0", "::", "[::]"}  # noqa: S104 - detecting it, not binding


def _is_loopback(address: str) -> bool:
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: assume it resolves to a reachable interface


@dataclass(frozen=True)
class Exposure:
    """Where a server listens (``binds``: ``address:port`` as the OS sees it), whether any of that is
    reachable from other machines, whether it demands a key, and what the app changed on the way."""

    binds: tuple[str, ...]
    network: bool
    has_key: bool
    narrowed: tuple[str, ...] = ()  # port mappings the app published on loopback instead of everywhere
    ignored_ports: tuple[str, ...] = ()  # port mappings Docker drops (host network)
    remote_host: str | None = None  # the Docker engine's machine, when it is not this one
    network_mode: str | None = None  # "host": the host's network, where Docker publishes no port
    host_mounts: tuple[str, ...] = ()  # warnings for mounts that hand the container the host

    def describe(self) -> str:
        """One sentence: ``listens on 0.0.0.0:8011 (every interface: reachable from the network)``."""
        where = ", ".join(self.binds) or "no published port"
        machine = f" of {self.remote_host}" if self.remote_host else ""
        if self.network:
            scope = f"every interface{machine}: reachable from the network"
            if not any(b.split(":")[0] in ("0.0.0.0", "[::]") for b in self.binds):  # noqa: S104
                scope = f"reachable from the network{machine}"
        else:
            scope = f"loopback only: this machine{machine} alone can reach it"
        if self.network_mode == "host":
            scope = f"the host's network, no port published: {scope}"
        key = "an API key is required" if self.has_key else "no API key"
        return f"listens on {where} ({scope}); {key}"

    @property
    def open_warning(self) -> str | None:
        """The warning for a server reachable from the network without a key (None: it is not)."""
        if not self.network or self.has_key:
            return None
        return (
            f"the server is reachable from the network ({', '.join(self.binds)}) without an API key: "
            "anyone who can reach it can use the model; set --api-key ${VLLM_API_KEY} or bind 127.0.0.1"
        )

    @property
    def warning_texts(self) -> tuple[str, ...]:
        """What the user must know before launching: an open server without a key, narrowed ports,
        the host's network, mounts that hand the container the host (the plan's exposure warnings)."""
        out: list[str] = []
        if self.network_mode == "host":
            out.append(host_network_warning(self.ignored_ports))
        if self.open_warning is not None:
            out.append(self.open_warning)
        for mapping in self.narrowed:
            out.append(
                f"port {mapping!r} is published on 127.0.0.1 only (Docker Compose would publish it on every "
                f"interface); write '0.0.0.0:{mapping}' to open it to the network"
            )
        out += self.host_mounts
        return tuple(out)


def api_key_reference(profile: Profile, secret_env: Mapping[str, str] | None = None) -> str | None:
    """The reference to the key this profile's server will want, as the backends hand it to vLLM:
    the ``--api-key`` flag in any spelling vLLM accepts (``--api-key=…``, ``--api_key``, ``--api-ke``),
    else the ``VLLM_API_KEY`` of the profile's environment (which vLLM reads). None: no key.
    ``secret_env``: a plan's own split of the secret flags (else they are split here). The plan
    carries it (``LaunchPlan.key``); every client of the server takes its key from there."""
    if secret_env is None:
        secret_env = split_secret_flags(profile.vllm_argv())[1]
    ref = secret_env.get("VLLM_API_KEY") or profile.env.get("VLLM_API_KEY")
    return ref or None


def has_api_key(profile: Profile) -> bool:
    """Whether the profile's server demands a key (``--api-key`` in any spelling, or VLLM_API_KEY)."""
    return api_key_reference(profile) is not None


def exposure_of(profile: Profile, remote_host: str | None = None, *, has_key: bool | None = None) -> Exposure:
    """Where ``profile``'s server will listen, as its runtime will start it (``has_key``: whether it
    wants a key, as the plan read it; else read here)."""
    key = has_api_key(profile) if has_key is None else has_key
    engine = profile.engine()
    if profile.runtime is Runtime.DOCKER and profile.docker is not None:
        mounts = tuple(host_mount_warnings(profile.docker.volumes))
        if profile.docker.network == "host":
            # Docker drops -p under host networking; vLLM in the container binds its --host
            # (0.0.0.0 when left out) on the host's own interfaces
            host = engine.host or "0.0.0.0"  # noqa: S104 - describing it, not binding
            shown = "0.0.0.0" if host in _ALL else host  # noqa: S104
            bind = f"{'[' + shown + ']' if ':' in shown else shown}:{engine.port or 8000}"
            return Exposure(
                (bind,),
                not _is_loopback(shown),
                key,
                remote_host=remote_host,
                network_mode="host",
                host_mounts=mounts,
                ignored_ports=tuple(profile.docker.ports),
            )
        binds: list[str] = []
        narrowed: list[str] = []
        # a mapping without an address: loopback, unless the profile publishes ports as in the file
        # (docker.bind: file), where Docker binds every interface as Compose would
        as_written = profile.docker.bind == "file"
        unnamed = "0.0.0.0" if as_written else LOOPBACK_DEFAULT  # noqa: S104
        for mapping in profile.docker.ports:
            spec = mapping.split("/")[0]
            parts = spec.rsplit(":", 2)
            if len(parts) == 3:
                ip, host_port = parts[0].strip("[]") or unnamed, parts[1]
            else:
                ip, host_port = unnamed, parts[0] if len(parts) == 2 else "?"
                if not as_written:
                    narrowed.append(mapping)
            shown = "0.0.0.0" if ip in _ALL else ip  # noqa: S104
            binds.append(f"{'[' + shown + ']' if ':' in shown else shown}:{host_port}")
        network = any(not _is_loopback(b.rsplit(":", 1)[0]) for b in binds)
        if profile.docker.network == "none":
            binds, network, narrowed = [], False, []  # no network at all: ports are ignored
        return Exposure(
            tuple(binds), network, key, tuple(narrowed), remote_host=remote_host, host_mounts=mounts
        )
    host = LOOPBACK_DEFAULT if engine.host is None else engine.host
    shown = "0.0.0.0" if host in _ALL else host  # noqa: S104
    bind = f"{'[' + shown + ']' if ':' in shown else shown}:{engine.port or 8000}"
    return Exposure((bind,), not _is_loopback(shown), key)
