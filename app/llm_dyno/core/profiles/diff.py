"""Semantic diff of two profiles: what would launch differently, not how it was spelled.

``--x=1`` and ``--x 1``, ``--max_model_len`` and ``--max-model-len``, flag order, the order of keys in a
JSON flag and the order of ports / volumes / env entries are not differences. A changed value, an
added or removed flag, another image or digest, env var, volume, port, shm size, GPU set or power limit are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel

from llm_dyno.core.profiles.flags import SWITCHES, parse_args
from llm_dyno.core.profiles.import_common import known_flags
from llm_dyno.core.profiles.model import Profile

__all__ = ["DiffRow", "ProfileDiff", "diff_profiles"]

Group = Literal["engine flags", "model", "container", "environment", "power", "runtime", "notes"]
Kind = Literal["added", "removed", "changed"]
GROUPS: tuple[Group, ...] = ("model", "engine flags", "container", "environment", "runtime", "power", "notes")

_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$", re.IGNORECASE)


@dataclass(frozen=True)
class DiffRow:
    """One difference: ``left`` is the value in the first profile, ``right`` in the second (None = absent)."""

    group: Group
    key: str
    left: str | None
    right: str | None
    kind: Kind


@dataclass(frozen=True)
class ProfileDiff:
    """The differences between two profiles, grouped and in a stable order."""

    rows: tuple[DiffRow, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when the two profiles launch the same thing."""
        return not self.rows

    def __iter__(self) -> Iterator[DiffRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"empty": self.is_empty, "rows": [asdict(r) for r in self.rows]}


def _show(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _flag_values(args: tuple[str, ...]) -> dict[str, str]:
    """Canonical flag name → displayed meaning of its last occurrence (argparse: the last one wins)."""
    known = known_flags()
    values: dict[str, str] = {}
    for flag in parse_args(args).flags:
        name, value = flag.name, flag.meaning()
        base = name[3:]
        if name.startswith("no-") and value is None and (base in SWITCHES or base in known):
            values[base] = "off"  # --no-enforce-eager is enforce-eager switched off
        else:
            values[name] = "on" if value is None else _show(value)
    return values


def _size_bytes(text: str | None) -> float | None:
    if text is None:
        return None
    m = _SIZE_RE.match(text.strip())
    if not m:
        return None
    return float(m.group(1)) * 1024.0 ** "bkmgt".index(m.group(2).lower() or "b")


def _keyed(items: tuple[str, ...], key_of: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key = key_of(item)
        out[key if key not in out else item] = item
    return out


def _volume_target(volume: str) -> str:
    parts = volume.split(":")
    if len(parts) >= 3:  # source:target:options
        parts = parts[:-1]
    return f"volume {parts[-1]}"


def _port_target(port: str) -> str:
    return f"port {port.rsplit(':', 1)[-1]}"


class _Rows:
    def __init__(self) -> None:
        self.rows: list[DiffRow] = []

    def compare(self, group: Group, key: str, left: Any, right: Any, *, same: bool | None = None) -> None:
        left_s = None if left is None else _show(left)
        right_s = None if right is None else _show(right)
        if same if same is not None else left_s == right_s:
            return
        kind: Kind = "added" if left_s is None else "removed" if right_s is None else "changed"
        self.rows.append(DiffRow(group, key, left_s, right_s, kind))

    def mapping(self, group: Group, left: dict[str, str], right: dict[str, str], prefix: str = "") -> None:
        for key in [*left, *(k for k in right if k not in left)]:
            self.compare(group, prefix + key, left.get(key), right.get(key))


def _plain(value: Any) -> Any:
    """A container setting as plain data for a diff row (empty reads as absent)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_defaults=True)
    if isinstance(value, tuple):  # of models too (secrets, volumes with a driver, …): each as data
        value = [v.model_dump(exclude_defaults=True) if isinstance(v, BaseModel) else v for v in value]
    return value or None


def diff_profiles(a: Profile, b: Profile, *, include_notes: bool = False) -> ProfileDiff:
    """What differs between ``a`` (left) and ``b`` (right); name and notes only with ``include_notes``."""
    r = _Rows()
    r.compare("model", "model", a.model, b.model)
    r.mapping("engine flags", _flag_values(a.args), _flag_values(b.args), "--")

    da, db = a.docker, b.docker
    image_a = da.image.split("@", 1)[0] if da else None
    image_b = db.image.split("@", 1)[0] if db else None
    r.compare("container", "image", image_a, image_b)
    r.compare("container", "image digest", da.image_digest if da else None, db.image_digest if db else None)
    for field in ("host", "container_name", "ipc", "runtime", "restart", "network", "user"):
        r.compare("container", field, getattr(da, field, None), getattr(db, field, None))
    if da is not None and db is not None:  # a default of the container section: only between two
        r.compare("container", "bind", da.bind, db.bind)
    r.compare("container", "working_dir", getattr(da, "working_dir", None), getattr(db, "working_dir", None))
    for field in (
        *("network_aliases", "labels", "ulimits", "tmpfs", "logging"),
        *("secrets", "driver_volumes", "image_volumes"),
    ):
        r.compare("container", field, _plain(getattr(da, field, None)), _plain(getattr(db, field, None)))
    shm_a, shm_b = (da.shm_size if da else None), (db.shm_size if db else None)
    same_size = _size_bytes(shm_a) is not None and _size_bytes(shm_a) == _size_bytes(shm_b)
    r.compare("container", "shm_size", shm_a, shm_b, same=(shm_a == shm_b) or same_size)
    ent_a, ent_b = (da.entrypoint if da else None), (db.entrypoint if db else None)
    r.compare("container", "entrypoint", list(ent_a) if ent_a else None, list(ent_b) if ent_b else None)
    r.mapping(
        "container",
        _keyed(da.ports if da else (), _port_target),
        _keyed(db.ports if db else (), _port_target),
    )
    r.mapping(
        "container",
        _keyed(da.volumes if da else (), _volume_target),
        _keyed(db.volumes if db else (), _volume_target),
    )

    r.mapping("environment", a.env, b.env)

    r.compare("runtime", "runtime", a.runtime.value, b.runtime.value)
    pa, pb = a.process, b.process
    r.compare("runtime", "executable", pa.executable if pa else None, pb.executable if pb else None)
    r.compare("runtime", "cwd", pa.cwd if pa else None, pb.cwd if pb else None)
    gpus_a = a.gpus if a.gpus in (None, "all") else ",".join(map(str, a.gpus or ()))
    gpus_b = b.gpus if b.gpus in (None, "all") else ",".join(map(str, b.gpus or ()))
    r.compare("runtime", "gpus", gpus_a, gpus_b)
    r.compare("runtime", "pre_start", a.pre_start, b.pre_start)

    wa, wb = a.power, b.power
    r.compare("power", "limit_w", wa.limit_w if wa else None, wb.limit_w if wb else None)
    per_a = {f"GPU {g} limit_w": str(w) for g, w in (wa.per_gpu_w if wa else {}).items()}
    per_b = {f"GPU {g} limit_w": str(w) for g, w in (wb.per_gpu_w if wb else {}).items()}
    r.mapping("power", per_a, per_b)
    r.compare(
        "power", "restore_on_stop", wa.restore_on_stop if wa else False, wb.restore_on_stop if wb else False
    )

    if include_notes:
        r.compare("notes", "name", a.name, b.name)
        r.compare("notes", "notes", a.notes or None, b.notes or None)
        ra = a.reference.model_dump(mode="json") if a.reference else None
        rb = b.reference.model_dump(mode="json") if b.reference else None
        r.compare("notes", "reference", ra, rb)
    order = {g: i for i, g in enumerate(GROUPS)}
    return ProfileDiff(tuple(sorted(r.rows, key=lambda row: order[row.group])))
