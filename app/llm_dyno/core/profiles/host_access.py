"""What hands a container the host: mounts of the engine's socket or of the host's system trees, and
the host's own network. The one judgement that import (a warning at the line) and ``plan`` (the
exposure notes, :mod:`llm_dyno.core.profiles.exposure`) both say."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

# the host's system trees: a container that can write them (or read /root, /etc/shadow) owns the host
_HOST_TREES = (
    "/etc",
    "/root",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
)
_ENGINES = ("docker", "containerd", "podman", "cri-o", "crio", "buildkit")


def _clean(source: str) -> str:
    path = posixpath.normpath(source)
    return "/" + path.lstrip("/")  # normpath keeps a leading "//"


def host_mount_reason(source: str) -> str | None:
    """Why mounting the host path ``source`` hands the container the host, or None when it does not
    (a named volume, or an ordinary folder)."""
    if not source.startswith("/"):
        return None  # a named volume (paths are absolute once imported)
    path = _clean(source)
    name = posixpath.basename(path).lower()
    if name.endswith(".sock") and any(engine in path.lower() for engine in _ENGINES):
        return (
            f"{path} is a container engine's socket: the container can start containers as root on the host"
        )
    if path == "/":
        return "/ is the host's whole file system"
    for tree in _HOST_TREES:
        if path == tree:
            return f"{path} is the host's own {tree}"
        if tree.startswith(path + "/"):
            return f"{path} holds the host's {tree}"
    return None


def host_mount_warning(volume: str) -> str | None:
    """The warning for a ``src:dst[:mode]`` mount that hands the container the host; None otherwise."""
    source = volume.split(":", 1)[0] if ":" in volume else ""
    reason = host_mount_reason(source)
    if reason is None:
        return None
    return (
        f"volume {volume!r} hands the container the host ({reason}): whoever runs code in it (the "
        "model's own code, anyone reaching a server without a key) controls the machine; mount only "
        "the folders the server needs"
    )


def host_mount_warnings(volumes: Iterable[str]) -> list[str]:
    """:func:`host_mount_warning` for each mount that hands the container the host."""
    return [w for w in map(host_mount_warning, volumes) if w is not None]


def host_network_warning(ports: Iterable[str]) -> str:
    """What ``network_mode: host`` means for where the server listens: Docker publishes nothing (its
    ports are ignored) and vLLM listens on the host's own interfaces, every one unless --host says."""
    ignored = ", ".join(repr(p) for p in ports)
    dropped = f"its ports ({ignored}) are ignored: " if ignored else ""
    return (
        f"network_mode host: the container uses the host's network, so {dropped}the server listens on "
        "the host's own interfaces (every one, 0.0.0.0, unless --host says otherwise), reachable from "
        "the network"
    )
