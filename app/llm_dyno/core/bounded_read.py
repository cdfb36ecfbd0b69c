"""Reading files the user names, bounded before anything is read: regular files only (a FIFO or a
device named like a log or a config never blocks the app), a size cap with a clear message, and the
head and tail of a log too big to read whole."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from llm_dyno.core.errors import DynoError, Location

# A compose file or a `docker run` / `vllm serve` line is kilobytes: anything past this is no import.
MAX_IMPORT_BYTES = 1 << 20

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISDIR, "a folder"),
)


def open_regular(path: Path, what: str) -> int:
    """A read-only descriptor of ``path``; DynoError when it cannot be opened or is no regular file
    (opened non-blocking, so a FIFO never waits for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise DynoError(f"cannot read {what}: {exc.strerror or exc}", where=Location(str(path))) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise DynoError(
            f"cannot read {what}: it is {kind}, not a regular file",
            where=Location(str(path)),
            hint="name the file itself",
        )
    return fd


def read_bytes_capped(path: Path, limit: int, what: str) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes; a clear DynoError otherwise."""
    fd = open_regular(path, what)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        size = os.path.getsize(path) if path.exists() else len(data)
        raise DynoError(
            f"{what} is too big: {size:,} bytes, more than {limit:,}",
            where=Location(str(path)),
            hint="is this the right file?",
        )
    return data


def read_text_capped(path: Path, limit: int, what: str) -> str:
    """:func:`read_bytes_capped` as UTF-8 text (a clear DynoError when it is not UTF-8)."""
    data = read_bytes_capped(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DynoError(f"{what} is not UTF-8 text (byte {exc.start})", where=Location(str(path))) from None


def read_log_bounded(path: Path, head: int = 2 << 20, tail: int = 8 << 20) -> tuple[str, int]:
    """A log's text, at most its first ``head`` and last ``tail`` bytes (the version and settings are
    at the top, the cause of a failure near the end); and how many bytes between them were skipped."""
    fd = open_regular(path, "the log")
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= head + tail:
            data = fh.read(head + tail)
            return data.decode("utf-8", errors="replace"), 0
        first = fh.read(head)
        fh.seek(size - tail)
        last = fh.read(tail)
    # cut at line ends, so that no half line is read as a whole one
    with contextlib.suppress(ValueError):
        first = first[: first.rindex(b"\n") + 1]
    with contextlib.suppress(ValueError):
        last = last[last.index(b"\n") + 1 :]
    skipped = size - len(first) - len(last)
    return (first + last).decode("utf-8", errors="replace"), skipped
