"""The profile folder's index: what each profile file held when it was last read.

Reading every profile's YAML is what made a folder of thousands of profiles slow (``profile show``
parsed them all to find one). Two files in the profiles folder keep what was read:

- ``.index.json`` (small, read by every scan): per file name, the file's modification time, size, inode
  and content hash, the profile's name and the fields ``profile list`` shows;
- ``.index-data.json`` (read only to build every profile, as the window does): per file name, its
  content hash and the parsed YAML as plain data, which is validated again without parsing YAML.

Neither is trusted blindly: every scan stats each file and reads again any file that is new, whose
time, size or inode changed (a hand edit, a save from another program) or that changed within
:data:`RACY_NS` of the scan that indexed it; entries of deleted files are dropped; cached data is used
only under the content hash the current entry has. A file that does not read is not indexed (it is read,
and its error reported, on every scan). A damaged or foreign index, or one another version of the app
wrote (its listed fields may be derived differently), is ignored and written anew. Writes are atomic and
best-effort: a read-only folder still works, only slower; of two processes that write at once one index
stays, and the next scan reads the file the other one added.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from llm_dyno import __version__
from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError, Location, StoreError
from llm_dyno.core.profiles.model import Profile, profile_from_data
from llm_dyno.core.profiles.yamlio import load_with_lines

INDEX_NAME = ".index.json"
DATA_NAME = ".index-data.json"
INDEX_FORMAT = 1
# a file changed within this long before the scan that indexed it may change again with the same time
# stamp (file times tick in jiffies, not nanoseconds): it is read again until it is older than that
RACY_NS = 2_000_000_000

Data = dict[str, Any]


@dataclass(frozen=True)
class IndexEntry:
    """One profile file as last read: its stat and content hash, and the fields the list shows."""

    file: str
    mtime_ns: int
    size: int
    inode: int
    sha1: str
    name: str
    runtime: str
    image: str | None
    model: str
    served_model_name: str | None
    port: int | None

    def stamp(self) -> tuple[int, int, int]:
        """What says the file is unchanged: (mtime_ns, size, inode)."""
        return (self.mtime_ns, self.size, self.inode)

    def summary(self) -> dict[str, Any]:
        """The fields ``profile list`` shows."""
        return {
            "name": self.name,
            "runtime": self.runtime,
            "image": self.image,
            "model": self.model,
            "served_model_name": self.served_model_name,
            "port": self.port,
        }


@dataclass(frozen=True)
class Scanned:
    """A profile file of the folder: its index entry when it reads (with its data and profile when this
    scan read it), else the error it reads with."""

    path: Path
    entry: IndexEntry | None
    error: DynoError | None = None
    data: Data | None = None
    read: Profile | None = None


@dataclass(frozen=True)
class ReadProfile:
    """A profile file read now: the profile, its YAML as plain data (None when the data would not come
    back from JSON the same, e.g. a number used as a key) and the hash of its bytes."""

    profile: Profile
    data: Data | None
    sha1: str


def read_profile(path: Path) -> ReadProfile:
    """Read and validate one profile file. Errors name the file, line and field."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read profile: {exc}", where=Location(str(path))) from None
    data, lines = load_with_lines(text, str(path))
    profile = profile_from_data(data, source=str(path), lines=lines)
    try:
        kept = json.loads(json.dumps(data))
    except (TypeError, ValueError):
        kept = None
    plain = kept if kept == data and isinstance(kept, dict) else None
    return ReadProfile(profile, plain, hashlib.sha1(raw, usedforsecurity=False).hexdigest())


def _entry(path: Path, stamp: tuple[int, int, int], read: ReadProfile) -> IndexEntry:
    profile = read.profile
    try:
        port = profile.engine().port
    except DynoError:
        port = None
    return IndexEntry(
        file=path.name, mtime_ns=stamp[0], size=stamp[1], inode=stamp[2], sha1=read.sha1, name=profile.name,
        runtime=profile.runtime.value, image=profile.docker.image if profile.docker else None,
        model=profile.model, served_model_name=profile.served_model_name, port=port,
    )  # fmt: skip


def _load(path: Path) -> dict[str, Any] | None:
    """A stored index document of this format and app version, else None."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or (raw.get("format"), raw.get("app")) != (INDEX_FORMAT, __version__):
        return None
    return raw


def _save(path: Path, doc: dict[str, Any]) -> None:
    text = json.dumps({"format": INDEX_FORMAT, "app": __version__, **doc}, separators=(",", ":"))
    with contextlib.suppress(OSError):  # best effort: without an index every scan reads every file
        atomic_write_text(path, text + "\n")


def _read_index(folder: Path) -> tuple[int, dict[str, IndexEntry]]:
    """When the stored index was scanned (ns) and its entries; nothing when it is missing or damaged."""
    raw = _load(folder / INDEX_NAME)
    try:
        if raw is None:
            return 0, {}
        entries = [IndexEntry(**e) for e in raw["entries"]]
        if not all(isinstance(e.file, str) and isinstance(e.name, str) for e in entries):
            return 0, {}
        return int(raw["scanned_ns"]), {e.file: e for e in entries}
    except (ValueError, TypeError, KeyError, AttributeError):
        return 0, {}


def scan(folder: Path, files: Iterable[Path]) -> list[Scanned]:
    """Each of ``files`` (in the given order) with its entry: from the index when its stamp is unchanged,
    else read now. The index is written again when anything changed."""
    scanned_ns = time.time_ns()
    indexed_ns, old = _read_index(folder)
    out: list[Scanned] = []
    fresh: list[IndexEntry] = []
    changed = False
    for path in files:
        try:
            stamp = _stamp(path.stat())
        except OSError as exc:
            error = StoreError(f"cannot read profile: {exc.strerror or exc}", where=Location(str(path)))
            out.append(Scanned(path, None, error))
            continue
        entry = old.get(path.name)
        if entry is not None and entry.stamp() == stamp and entry.mtime_ns < indexed_ns - RACY_NS:
            fresh.append(entry)
            out.append(Scanned(path, entry))
            continue
        try:
            read = read_profile(path)
        except DynoError as exc:
            out.append(Scanned(path, None, exc))
            continue
        new = _entry(path, stamp, read)
        # a racy entry read again the same is not rewritten (a window watching the folder would reload
        # on each write)
        changed = changed or new != entry
        fresh.append(new)
        out.append(Scanned(path, new, data=read.data, read=read.profile))
    if changed or {e.file for e in fresh} != set(old):
        _save(folder / INDEX_NAME, {"scanned_ns": scanned_ns, "entries": [asdict(e) for e in fresh]})
    return out


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def build_profiles(folder: Path, items: Iterable[Scanned]) -> list[tuple[Scanned, Profile | DynoError]]:
    """The profile of each indexed item: the one this scan read, else built from the cached data of the
    same content hash (no YAML parse), else read from its file. The data cache is written again when
    anything in it changed."""
    raw = _load(folder / DATA_NAME)
    cache: dict[str, list[Any]] = raw.get("entries", {}) if raw is not None else {}
    if not isinstance(cache, dict):
        cache = {}
    kept: dict[str, list[Any]] = {}
    out: list[tuple[Scanned, Profile | DynoError]] = []
    for item in items:
        entry = item.entry
        if entry is None:
            continue
        result: Profile | DynoError
        data: Data | None = item.data
        if item.read is not None:
            result = item.read
        else:
            cached = cache.get(entry.file)
            if isinstance(cached, list) and len(cached) == 2 and cached[0] == entry.sha1:
                data = cached[1] if isinstance(cached[1], dict) else None
            result, data = _from_data(item.path, data)
        if data is not None:
            kept[entry.file] = [entry.sha1, data]
        out.append((item, result))
    if kept != cache:
        _save(folder / DATA_NAME, {"entries": kept})
    return out


def _from_data(path: Path, data: Data | None) -> tuple[Profile | DynoError, Data | None]:
    """The profile from cached data; from the file (with its data) when there is none or it no longer
    validates (a newer check, a hand-edited cache)."""
    if data is not None:
        with contextlib.suppress(DynoError):
            return profile_from_data(data, source=str(path)), data
    try:
        read = read_profile(path)
    except DynoError as exc:
        return exc, None
    return read.profile, read.data
