"""What a compose volume means beyond ``src:dst[:mode]``: the long syntax's options, image volumes, and
top-level volume declarations: a ``local`` bind is its folder, a volume with a driver or options is
created by the launch (:mod:`~llm_dyno.core.runtime.docker_volumes`), as Compose creates it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.compose_project import ComposeContext
from llm_dyno.core.profiles.host_access import host_mount_warning, host_network_warning
from llm_dyno.core.profiles.import_common import secret_assignment
from llm_dyno.core.profiles.yamlio import Path_, line_for
from llm_dyno.core.secrets import secret_in_text


def refuse_unmountable(item: dict[str, Any], kind: Any, where: Location) -> None:
    """Refuse a long-syntax volume LLM Dyno cannot mount, saying why: a named pipe (Windows), a
    cluster volume (Swarm), or one without a target. (An image volume is kept: the launch mounts it
    on Docker Engine 28+ / API 1.48 and refuses it below, as Compose does.)"""
    if kind in ("npipe", "cluster") or "target" not in item:
        raise ImportFormatError(
            f"a volume of type {kind!r}"
            + ("" if "target" in item else " without a target")
            + " cannot be mounted by LLM Dyno",
            where=where,
            hint="mount a folder or a named volume instead",
        )


def image_volume(item: dict[str, Any], ctx: ComposeContext, where: Location) -> dict[str, Any]:
    """A ``type: image`` volume as ``docker.image_volumes`` keeps it: the image, the target, the
    ``image.subpath`` inside it and ``read_only`` (compose-go ``ServiceVolumeImage``)."""
    source = ctx.interpolate(str(item.get("source") or ""), where).strip()
    if not source:
        raise ImportFormatError(
            "an image volume needs the image to mount as its source (an unset variable?); Docker "
            "refuses an image mount without one too",
            where=where,
            hint="write source: IMAGE (e.g. nginx:alpine) or set the variable",
        )
    options: dict[str, Any] = item["image"] if isinstance(item.get("image"), dict) else {}
    out: dict[str, Any] = {"image": source, "target": ctx.interpolate(str(item["target"]), where)}
    if options.get("subpath"):
        out["subpath"] = ctx.interpolate(str(options["subpath"]), where)
    if item.get("read_only"):
        out["read_only"] = True
    return out


def warn_host_access(volume: str, warnings: list[str], where: Location) -> str:
    """``volume`` (``src:dst[:mode]``), with a warning at its line when it hands the container the
    host (the engine's socket, ``/``, ``/etc``, …: :mod:`~llm_dyno.core.profiles.host_access`)."""
    warning = host_mount_warning(volume)
    if warning is not None:
        warnings.append(f"{where}: {warning}")
    return volume


def warn_host_network(ports: Any, warnings: list[str], where: Location) -> None:
    """The warning at ``network_mode: host``: Docker drops the service's ports and the server listens
    on the host's own interfaces (see :func:`~llm_dyno.core.profiles.host_access.host_network_warning`)."""
    written = [str(p.get("published", p.get("target")) if isinstance(p, dict) else p) for p in ports or ()]
    warnings.append(f"{where}: {host_network_warning(written if isinstance(ports, list) else [])}")


def long_volume_options(item: dict[str, Any], kind: str, warnings: list[str], where: Location) -> list[str]:
    """The mode of a long-syntax mount as the short syntax writes it: ``ro``, the bind propagation
    (``rslave``), the SELinux label (``z``), ``nocopy``."""
    options = ["ro"] if item.get("read_only") else []
    bind: dict[str, Any] = item["bind"] if isinstance(item.get("bind"), dict) else {}
    if bind.get("propagation"):
        options.append(str(bind["propagation"]))
    if bind.get("selinux"):
        options.append(str(bind["selinux"]))
    volume: dict[str, Any] = item["volume"] if isinstance(item.get("volume"), dict) else {}
    if volume.get("nocopy"):
        options.append("nocopy")
    if kind == "bind" and bind.get("create_host_path") is False:
        warnings.append(f"{where}: create_host_path: false is not kept (Docker creates a missing folder)")
    return options


@dataclass(frozen=True)
class LocalBind:
    """The folder a ``local``-driver volume binds, and whether its ``o:`` options make it read-only."""

    path: str
    read_only: bool


def local_bind(
    name: str, declared: Any, ctx: ComposeContext, source: str | None, lines: dict[Path_, int]
) -> LocalBind | None:
    """A volume declared with the ``local`` driver bound to a folder (``driver_opts: {type: none,
    o: bind, device: PATH}``, or ``rbind``) is that folder, as Docker mounts it (None for any other
    volume): a folder the container gets, told like any other bind (the host's ``/``, its socket, …)."""
    if not isinstance(declared, dict):
        return None
    driver = declared.get("driver") or "local"
    opts = declared.get("driver_opts") or {}
    where = Location(source, line_for(lines, ("volumes", name)), f"volumes.{name}")
    if (
        driver == "local"
        and isinstance(opts, dict)
        and str(opts.get("type")) == "none"
        and {"bind", "rbind"} & {o.strip() for o in str(opts.get("o", "")).split(",")}
        and opts.get("device")
    ):
        options = [o.strip() for o in str(opts.get("o", "")).split(",")]
        path = ctx.resolve_path(ctx.interpolate(str(opts["device"]), where), where)
        return LocalBind(path, "ro" in options)
    return None


def driver_volume(
    name: str,
    engine_name: str,
    declared: Any,
    ctx: ComposeContext,
    source: str | None,
    lines: dict[Path_, int],
) -> dict[str, Any] | None:
    """A declared volume the launch creates with its driver and options (``docker.driver_volumes``),
    as Compose creates it before the containers: one with ``driver:`` other than ``local`` or with
    ``driver_opts:`` (an external one is not created: it must exist). Options that hold a secret are
    refused: the profile would store it, and ``docker volume inspect`` shows them to every user."""
    if not isinstance(declared, dict) or declared.get("external"):
        return None
    driver = declared.get("driver") or "local"
    opts = declared.get("driver_opts") or {}
    if driver == "local" and not opts:
        return None
    where = Location(source, line_for(lines, ("volumes", name)), f"volumes.{name}")
    if not isinstance(opts, dict):
        raise ImportFormatError(f"volume '{name}': driver_opts must be a mapping", where=where)
    options: dict[str, str] = {}
    for key, written in opts.items():
        value, kept = ctx.interpolate_counted(str(written), where)
        options[str(key)] = value
        # mount options are comma-separated (o: username=me,password=…): each one is looked at
        parts = [f"{key}={value}", *re.split(r"[,\s]+", value)]
        kind = secret_in_text(value) or next((k for k in map(secret_assignment, parts) if k), None)
        if kind is None and kept:  # a reference would reach Docker as written, or resolved be shown
            kind = "a reference to a secret"
        if kind is not None:
            raise ImportFormatError(
                f"volume '{name}': driver_opts.{key} holds {kind}; not imported (a profile holds no "
                "secrets, and a volume's options are shown by docker volume inspect)",
                where=Location(source, line_for(lines, ("volumes", name, "driver_opts", key)), where.field),
                hint="create the volume yourself (docker volume create …) and declare it external: true",
            )
    labels = (
        {str(k): str(v) for k, v in (declared.get("labels") or {}).items()}
        if isinstance(declared.get("labels"), dict)
        else {}
    )
    if ctx.project is not None:  # Compose's own labels, so that `docker compose` later finds it its own
        labels |= {"com.docker.compose.project": ctx.project, "com.docker.compose.volume": name}
    return {
        "name": engine_name,
        "driver": ctx.interpolate(str(driver), where),
        "options": options,
        "labels": labels,
    }
