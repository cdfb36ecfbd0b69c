"""Compose v2's service-level composition: ``extends:`` (same file or another), the ``!reset`` and
``!override`` YAML tags, and ``profiles:`` (a service in no active profile is not started).

Merge rules, as compose-go applies them to ``extends``: the extending service's values win; mappings
(``environment``, ``labels``, ``ulimits``, ``deploy``, …) merge key by key (list forms of
``environment`` / ``labels`` read as mappings); ``volumes`` merge by container path; other lists
(``ports``, ``env_file``, ``dns``, …) are appended without duplicates; ``command``, ``entrypoint`` and
scalars are replaced. ``!reset`` removes a key (also what ``extends`` brings), ``!override`` replaces
instead of merging. Relative paths of a service taken from another file (bind sources, ``env_file``)
are read against that file's folder, which must lie inside the project folder, as env files must.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.profiles.compose_dotenv import read_bounded
from llm_dyno.core.profiles.compose_tags import Override, Reset
from llm_dyno.core.profiles.yamlio import load_with_lines

MAX_EXTENDS_DEPTH = 16
_REPLACED = frozenset({"command", "entrypoint", "image", "build"})
_MAPPINGS_FROM_LISTS = frozenset({"environment", "labels"})


def _as_mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        out: dict[str, Any] = {}
        for item in value:
            key, eq, val = str(item).partition("=")
            out[key] = val if eq else None
        return out
    return dict(value) if isinstance(value, dict) else {}


def _volume_target(item: Any) -> str:
    if isinstance(item, dict):
        return str(item.get("target", ""))
    parts = str(item).split(":")
    return (
        parts[1]
        if len(parts) > 1 and not (parts[0].startswith("/") and not parts[1].startswith("/"))
        else parts[0]
    )


def merge(base: Any, over: Any, key: str = "") -> Any:
    """``over`` (the extending service's value) merged onto ``base`` (the extended one's)."""
    if isinstance(over, Reset):
        return Reset()
    if isinstance(over, Override):
        return over.value
    if key in _REPLACED or base is None:
        return over
    if key in _MAPPINGS_FROM_LISTS and isinstance(base, list | dict) and isinstance(over, list | dict):
        return {**_as_mapping(base), **_as_mapping(over)}
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base.get(k), v, str(k) if not key else f"{key}.{k}")
        return {k: v for k, v in out.items() if not isinstance(v, Reset)}
    if isinstance(base, list) and isinstance(over, list):
        if key == "volumes":
            targets = {_volume_target(v) for v in over}
            return [v for v in base if _volume_target(v) not in targets] + over
        return base + [v for v in over if v not in base]
    return over


@dataclass
class ServiceSource:
    """Where services are read from: one compose document, its folder and its line map."""

    services: dict[str, Any]
    folder: Path | None
    source: str | None
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)


@dataclass(frozen=True)
class Origin:
    """A service ``extends`` brought keys from: its file (name and line map) and its name there."""

    file: ServiceSource
    service: str


def resolve_extends(
    name: str,
    here: ServiceSource,
    project: Path | None,
    where: Location,
    *,
    seen: tuple[tuple[str | None, str], ...] = (),
    chain: list[Origin] | None = None,
) -> dict[str, Any]:
    """Service ``name`` of ``here`` with its ``extends`` chain applied (tags still in place).
    ``chain`` collects the services extended (nearest first), so that a key they brought is reported
    at its own file and line."""
    svc = here.services.get(name)
    if not isinstance(svc, dict):
        raise ImportFormatError(f"extends: no service '{name}' in {here.source or 'this file'}", where=where)
    if (here.source, name) in seen or len(seen) >= MAX_EXTENDS_DEPTH:
        names = " → ".join(n for _, n in (*seen, (here.source, name)))
        raise ImportFormatError(f"extends: a cycle or a chain too long ({names})", where=where)
    ext = svc.get("extends")
    if ext is None or isinstance(ext, Reset):
        return svc
    if isinstance(ext, str):
        ext = {"service": ext}
    if not isinstance(ext, dict) or not ext.get("service"):
        raise ImportFormatError("extends: needs a service (extends: NAME or {service:, file:})", where=where)
    base_src = here
    if ext.get("file"):
        base_src = _other_file(str(ext["file"]), here, project, where)
    if chain is not None:
        chain.append(Origin(base_src, str(ext["service"])))
    base = resolve_extends(
        str(ext["service"]), base_src, project, where, seen=(*seen, (here.source, name)), chain=chain
    )
    if base_src.folder is not None and base_src.folder != here.folder:
        base = _rebased(base, base_src.folder)
    own = {k: v for k, v in svc.items() if k != "extends"}
    merged = merge(base, own)
    return {k: v for k, v in merged.items() if k != "extends" and not isinstance(v, Reset)}


def _other_file(name: str, here: ServiceSource, project: Path | None, where: Location) -> ServiceSource:
    if here.folder is None:
        raise ImportFormatError(
            f"extends: file {name} cannot be read: pasted text has no folder",
            where=where,
            hint="import the compose file itself",
        )
    path = Path(name) if Path(name).is_absolute() else here.folder / name
    if not path.exists():
        raise ImportFormatError(
            f"extends: file {name} not found ({path})",
            where=where,
            hint="put the file beside the compose file, or flatten the project first: docker compose "
            "config > flat.yml, then import flat.yml",
        )
    text = read_bounded(path, project, where, what="extends: file")
    try:
        data, lines = load_with_lines(text, str(path))
    except ProfileError as exc:
        raise ImportFormatError(exc.message, where=exc.where, hint=exc.hint) from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict):
        raise ImportFormatError(f"extends: {name} has no services:", where=where)
    return ServiceSource(
        {str(k): v for k, v in services.items()}, Path(os.path.realpath(path)).parent, str(path), lines
    )


def _rebased(svc: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A service from another file with its relative bind sources and env files made absolute."""
    out = dict(svc)

    def rebase(p: str) -> str:
        return os.path.normpath(folder / p) if p.startswith(".") else p

    if isinstance(out.get("volumes"), list):
        vols: list[Any] = []
        for v in out["volumes"]:
            if isinstance(v, str) and v.startswith("."):
                src, _, rest = v.partition(":")
                vols.append(f"{rebase(src)}:{rest}" if rest else v)
            elif isinstance(v, dict) and str(v.get("source", "")).startswith("."):
                vols.append({**v, "source": rebase(str(v["source"]))})
            else:
                vols.append(v)
        out["volumes"] = vols
    env_file = out.get("env_file")
    if env_file is not None:
        entries = env_file if isinstance(env_file, list) else [env_file]
        out["env_file"] = [
            {**e, "path": str(folder / str(e.get("path", "")))}
            if isinstance(e, dict)
            else str(folder / str(e))
            for e in entries
        ]
    return out


def active(svc: Any, active_profiles: set[str]) -> bool:
    """Whether a service runs without being asked for by name: no ``profiles:``, or one of them active
    (``COMPOSE_PROFILES``; ``*`` activates all)."""
    if not isinstance(svc, dict) or not svc.get("profiles"):
        return True
    wanted = svc["profiles"] if isinstance(svc["profiles"], list) else [svc["profiles"]]
    return "*" in active_profiles or bool(active_profiles & {str(p) for p in wanted})
