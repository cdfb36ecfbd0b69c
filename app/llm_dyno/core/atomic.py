"""Crash-safe file writes: temp file, fsync, rename, fsync of the folder."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str, *, backup: bool = False) -> None:
    """Replace ``path`` with ``text`` so that a kill at any moment leaves the old or the new file, whole.

    With ``backup`` the previous content is kept as ``<name>.bak`` (itself written atomically).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if backup and path.exists():
        _replace_with(path.with_name(path.name + ".bak"), path.read_bytes())
    _replace_with(path, text.encode("utf-8"))


def _replace_with(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def remove_stale_temps(folder: Path) -> int:
    """Delete temp files left by writers killed mid-write; returns how many were removed."""
    count = 0
    for tmp in folder.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()
            count += 1
    return count
