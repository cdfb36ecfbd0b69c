"""A profile's driver volumes and image volumes as the exporters write them, so that the exported file or
line makes the same mounts as the launch:

- a compose file declares a driver volume with its ``driver``, ``driver_opts`` and labels (Compose
  creates it before the container, as the launch does) and lists each image volume in the long syntax
  (``type: image``, ``image.subpath``);
- a ``docker run`` line mounts a driver volume with ``--mount type=volume,…,volume-driver=…,
  volume-opt=…`` (Docker creates it with them when it is missing) and an image volume with ``--mount
  type=image,…,image-subpath=…`` (docker 28+), fields written as Docker's CSV reader of ``--mount``
  reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llm_dyno.core.errors import Location, ProfileError
from llm_dyno.core.profiles.model import DockerSettings, DriverVolume

# labels Docker Compose gives a volume itself: a compose export leaves them to it
_COMPOSE_LABEL = "com.docker.compose."


def _driver_volumes(docker: DockerSettings) -> dict[str, DriverVolume]:
    return {v.name: v for v in docker.driver_volumes}


def compose_declaration(docker: DockerSettings, source: str, escape: Callable[[str], str]) -> dict[str, Any]:
    """The top-level ``volumes:`` entry of a named volume: its engine name, and for a driver volume
    its driver, options and the labels Compose does not add itself (``escape``: Compose's ``$$``)."""
    out: dict[str, Any] = {"name": escape(source)}
    volume = _driver_volumes(docker).get(source)
    if volume is None:
        return out
    out["driver"] = escape(volume.driver)
    if volume.options:
        out["driver_opts"] = {escape(k): escape(v) for k, v in volume.options.items()}
    labels = {escape(k): escape(v) for k, v in volume.labels.items() if not k.startswith(_COMPOSE_LABEL)}
    if labels:
        out["labels"] = labels
    return out


def compose_image_volumes(docker: DockerSettings, escape: Callable[[str], str]) -> list[dict[str, Any]]:
    """The image volumes as a service's long-syntax ``volumes:`` entries."""
    out = []
    for v in docker.image_volumes:
        entry: dict[str, Any] = {"type": "image", "source": escape(v.image), "target": escape(v.target)}
        if v.read_only:
            entry["read_only"] = True
        if v.subpath:
            entry["image"] = {"subpath": escape(v.subpath)}
        out.append(entry)
    return out


def _csv(field: str) -> str:
    """A ``--mount`` field as Docker's CSV reader takes it: quoted when it holds a comma or a quote."""
    if any(c in field for c in ',"\n') or field != field.strip():
        return '"' + field.replace('"', '""') + '"'
    return field


def docker_run_mounts(docker: DockerSettings) -> list[tuple[str, str]]:
    """Each volume of the profile as a ``docker run`` option and its (unquoted) value, in order:
    ``-v`` for a bind or a plain named volume, ``--mount`` for a driver volume and an image volume."""
    drivers = _driver_volumes(docker)
    out: list[tuple[str, str]] = []
    for i, entry in enumerate(docker.volumes):
        source, _, rest = entry.partition(":")
        volume = drivers.get(source)
        if volume is None:
            out.append(("-v", entry))
            continue
        target, _, mode = rest.partition(":")
        fields = ["type=volume", f"source={source}", f"target={target}"]
        for option in filter(None, mode.split(",")):
            if option not in ("ro", "rw", "nocopy"):
                raise ProfileError(
                    f"volume {entry!r}: mode {option!r} has no --mount field for a volume with a driver",
                    where=Location(None, None, f"docker.volumes[{i}]"),
                    hint="export it as a compose file instead",
                )
            fields += {"ro": ["readonly"], "rw": [], "nocopy": ["volume-nocopy"]}[option]
        fields.append(f"volume-driver={volume.driver}")
        fields += [f"volume-opt={k}={v}" for k, v in volume.options.items()]
        fields += [f"volume-label={k}={v}" for k, v in sorted(volume.labels.items())]
        out.append(("--mount", ",".join(map(_csv, fields))))
    for v in docker.image_volumes:
        fields = ["type=image", f"source={v.image}", f"target={v.target}"]
        fields += [f"image-subpath={v.subpath}"] if v.subpath else []
        fields += ["readonly"] if v.read_only else []
        out.append(("--mount", ",".join(map(_csv, fields))))
    return out
