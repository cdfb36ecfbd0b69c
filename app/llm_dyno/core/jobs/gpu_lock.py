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
from llm_dyno.core.jobs.gpus import MAX_GPU_INDEX
from llm_dyno.core.paths import data_dir
from llm_dyno.core.telemetry.nvml import nvml


class GpuBusy(DynoError):
    """Another job is changing the GPU."""


def check_gpus_exist(gpus: Sequence[int]) -> None:
    """:class:`DynoError` for an index that is no GPU of this machine (beyond what NVML counts, or
    beyond :data:`MAX_GPU_INDEX` when NVML cannot count): a lock file is made only for a real GPU."""
    count = nvml().device_count() if nvml().available() is None else None
    for gpu in gpus:
        if not 0 <= gpu <= MAX_GPU_INDEX or (count is not None and gpu >= count):
            if count is None:
                where = f"GPU indices go from 0 to {MAX_GPU_INDEX}"
            else:
                where = f"this machine has {count} (indices 0..{count - 1})" if count else "NVML sees no GPU"
            raise DynoError(f"no GPU {gpu}: {where}", hint="`llm-dyno power show` lists this machine's GPUs")


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
    check_gpus_exist(gpus)
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
