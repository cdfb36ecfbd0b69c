"""One queue per GPU: jobs that change a GPU (a power-cap sweep, the power control) take its lock.

The locks are ``flock`` locks on files under ``data_dir()/gpu-locks``, so they hold across threads of
the window and across processes (the window's power control against ``llm-dyno sweep`` in a terminal).
A job that finds a GPU taken is refused at once with who holds it, rather than racing the other.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from llm_dyno.core.errors import DynoError
from llm_dyno.core.paths import data_dir


class GpuBusy(DynoError):
    """Another job is changing the GPU."""


def _lock_file(gpu: int) -> Path:
    folder = data_dir() / "gpu-locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"gpu-{gpu}.lock"


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "another job"
    except OSError:
        return "another job"


@contextlib.contextmanager
def gpu_locks(gpus: Sequence[int], holder: str) -> Iterator[None]:
    """Hold the locks of ``gpus`` (this machine's indices) for ``holder`` (e.g. "sweep of cpu-demo");
    :class:`GpuBusy` naming the holder when one is taken."""
    fds: list[int] = []
    try:
        for gpu in sorted(set(gpus)):
            path = _lock_file(gpu)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise GpuBusy(
                    f"GPU {gpu} is being changed by {_holder(path)}",
                    hint="wait until it has finished (or cancel it), then try again",
                ) from None
            fds.append(fd)
            os.ftruncate(fd, 0)
            os.write(fd, f"{holder} (pid {os.getpid()})\n".encode())
        yield
    finally:
        for fd in fds:
            os.close(fd)
