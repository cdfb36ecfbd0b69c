"""Crash-safe file writes: temp file, fsync, rename, fsync of the folder."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from pathlib import Path

# Our temp files, and only ours: ".<name>.llm-dyno-<random>.tmp" (a user's or another tool's
# ".something.tmp" in the same folder is not ours to delete)
_TEMP_MARK = ".llm-dyno-"
_OUR_TEMP = re.compile(r"^\..+\.llm-dyno-[A-Za-z0-9_]+\.tmp$")


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str, *, backup: bool = False) -> None:
    """Replace ``path`` with ``text`` so that a kill at any moment leaves the old or the new file, whole.

    With ``backup`` the previous content is kept as ``<name>.bak`` (itself written atomically).
    A symlink stays a symlink: the file it points to is replaced (the user linked it on purpose,
    e.g. into a dotfiles repository).
    """
    if path.is_symlink():
        path = path.resolve()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if backup and path.exists():
            _replace_with(path.with_name(path.name + ".bak"), path.read_bytes())
        _replace_with(path, text.encode("utf-8"))
    except OSError as exc:
        raise clear_os_error(exc, path) from None


def clear_os_error(exc: OSError, path: Path) -> OSError:
    """``exc`` with a message a user can act on for a full disk or quota ("no space left on the
    device of FOLDER while writing NAME"); other errors unchanged. ``strerror`` carries the message,
    so callers that show ``exc.strerror`` or ``str(exc)`` both show it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        what = "no space left" if exc.errno == errno.ENOSPC else "disk quota exceeded"
        return OSError(exc.errno, f"{what} on the device of {path.parent} while writing {path.name}")
    return exc


def _replace_with(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{_TEMP_MARK}", suffix=".tmp", dir=path.parent)
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
    """Delete temp files left by our writers killed mid-write (no other file); returns how many."""
    count = 0
    for tmp in folder.glob(".*.tmp"):
        if not _OUR_TEMP.match(tmp.name):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            count += 1
    return count
