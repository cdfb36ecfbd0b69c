"""A profile's volumes beyond ``src:dst`` binds, as Docker Compose v2 makes them.

- A named volume with a driver (compose ``volumes: {name: {driver:, driver_opts:}}``) is created by the
  launch before the container, through the engine (docker/compose ``pkg/compose/create.go``
  ``createVolume``); a driver whose plugin the engine lacks fails the launch before any container or
  volume exists, naming the volume, the driver and the plugin to install.
- An image volume (compose ``type: image``) is a ``Mount`` of type ``image``: Docker Engine API 1.48
  added it ("POST /containers/create now supports Mount of type image", the Engine API version history,
  https://docs.docker.com/engine/api/version-history/#v148-api-changes; the Mount schema of API 1.48:
  ``Type: "image"``, ``Source``: the image reference, ``Target``, ``ReadOnly``, ``ImageOptions:
  {Subpath}``, a path inside the image, relative, without back traversals). Compose refuses it on an
  older engine ("volume with type=image require Docker Engine v28 or later"), and so does the launch,
  naming the engine's API version and the one needed, before anything is created.

This module is the pure half (the mounts, the ``docker volume create`` lines ``plan`` prints); the
launch's checks and creation live in :mod:`~llm_dyno.core.runtime.docker_volume_create`.
"""

from __future__ import annotations

import shlex
from typing import Any

from llm_dyno.core.profiles.model import DockerSettings, DriverVolume

IMAGE_MOUNT_API = "1.48"  # the first Engine API version with Mount type image (Docker Engine 28)


def image_mounts(settings: DockerSettings) -> list[dict[str, Any]]:
    """The image volumes as ``HostConfig.Mounts`` entries, in the shape of Engine API 1.48's Mount."""
    out = []
    for v in settings.image_volumes:
        mount: dict[str, Any] = {
            "Type": "image",
            "Source": v.image,
            "Target": v.target,
            "ReadOnly": v.read_only,
        }
        if v.subpath:
            mount["ImageOptions"] = {"Subpath": v.subpath}
        out.append(mount)
    return out


def volume_create_argv(volume: DriverVolume, docker_argv: list[str]) -> list[str]:
    """``docker volume create`` of one driver volume, as ``plan`` shows it (``docker_argv``: ``docker``
    and its host option)."""
    argv = [*docker_argv, "volume", "create", "--driver", volume.driver]
    for key, value in volume.options.items():
        argv += ["--opt", f"{key}={value}"]
    for key, value in sorted(volume.labels.items()):
        argv += ["--label", f"{key}={value}"]
    return [*argv, "--", volume.name]


def volume_lines(settings: DockerSettings, docker_argv: list[str]) -> list[str]:
    """The lines ``plan`` prints before its ``docker run`` for the volumes the launch creates."""
    lines = []
    if settings.image_volumes:
        lines.append(
            f"# image volume(s) at {', '.join(v.target for v in settings.image_volumes)}: Docker Engine 28+ "
            f"(API {IMAGE_MOUNT_API}) mounts them; launch checks the engine's API version first"
        )
    for volume in settings.driver_volumes:
        lines += [
            f"# volume {volume.name} (driver {volume.driver}) is created before the container, when missing:",
            shlex.join(volume_create_argv(volume, docker_argv)),
        ]
    return lines
