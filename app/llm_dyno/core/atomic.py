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


def link_refused(path: Path) -> OSError:
    """The error for a symbolic link where the app keeps its own files (server records, logs,
    history, keys): it is never written through, and the file it points to is left untouched."""
    return OSError(
        errno.ELOOP,
        f"{path} is a symbolic link: LLM Dyno does not write through links in its data folder "
        "(the file it points to is left untouched); remove the link and try again",
    )


def refuse_link(path: Path) -> None:
    """Raise :func:`link_refused` when ``path`` is a symbolic link (dangling or not)."""
    if path.is_symlink():
        raise link_refused(path)


def open_no_follow(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a link in the last component (:func:`link_refused` instead)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise link_refused(path) from None
        raise


def atomic_write_text(path: Path, text: str, *, backup: bool = False, follow_link: bool = False) -> None:
    """Replace ``path`` with ``text`` so that a kill at any moment leaves the old or the new file, whole.

    With ``backup`` the previous content is kept as ``<name>.bak`` (itself written atomically).
    A symlink is refused (:func:`link_refused`), unless ``follow_link``: then it stays a symlink and
    the file it points to is replaced (profiles and settings the user linked on purpose, e.g. into a
    dotfiles repository).
    """
    if path.is_symlink():
        if not follow_link:
            raise link_refused(path)
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
