"""What a compose volume means beyond ``src:dst[:mode]``: the long syntax's options, and top-level
volume declarations whose driver LLM Dyno would have to create (it creates no volumes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.compose_project import ComposeContext
from llm_dyno.core.profiles.host_access import host_mount_warning, host_network_warning
from llm_dyno.core.profiles.yamlio import Path_, line_for


def refuse_unmountable(item: dict[str, Any], kind: Any, where: Location) -> None:
    """Refuse a long-syntax volume LLM Dyno cannot mount, saying why: an image volume (Docker Engine
    28+, API 1.48, mounts an image's files; docker/compose's TestImageVolume requires that engine), a
    named pipe (Windows), a cluster volume (Swarm), or one without a target."""
    if kind == "image" and "target" in item:
        raise ImportFormatError(
            "a volume of type 'image' mounts an image's files: only Docker Engine 28+ (API 1.48) makes "
            "such mounts (Compose needs that engine too), and LLM Dyno does not make them",
            where=where,
            hint="copy the files into a folder or a named volume and mount that instead",
        )
    if kind in ("npipe", "cluster") or "target" not in item:
        raise ImportFormatError(
            f"a volume of type {kind!r}"
            + ("" if "target" in item else " without a target")
            + " cannot be mounted by LLM Dyno",
            where=where,
            hint="mount a folder or a named volume instead",
        )


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
    o: bind, device: PATH}``) is that folder, as Docker mounts it; any other driver or option
    cannot be made by LLM Dyno (it creates no volumes) and is refused, naming the declaration."""
    if not isinstance(declared, dict):
        return None
    driver = declared.get("driver") or "local"
    opts = declared.get("driver_opts") or {}
    if driver == "local" and not opts:
        return None
    where = Location(source, line_for(lines, ("volumes", name)), f"volumes.{name}")
    if (
        driver == "local"
        and isinstance(opts, dict)
        and str(opts.get("type")) == "none"
        and "bind" in str(opts.get("o", "")).split(",")
        and opts.get("device")
    ):
        options = [o.strip() for o in str(opts.get("o", "")).split(",")]
        path = ctx.resolve_path(ctx.interpolate(str(opts["device"]), where), where)
        return LocalBind(path, "ro" in options)
    raise ImportFormatError(
        f"volume '{name}' uses driver {driver!r} with options {sorted(map(str, opts))}: LLM Dyno "
        "creates no volumes, so it cannot make this one",
        where=where,
        hint="create the volume first (docker volume create …) and declare it external: true",
    )
