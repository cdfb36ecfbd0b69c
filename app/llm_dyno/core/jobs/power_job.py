"""Power-limit changes as jobs: each takes the GPU's lock, so it cannot race a sweep of that GPU."""

from __future__ import annotations

from llm_dyno.core.jobs.gpu_lock import gpu_locks
from llm_dyno.core.telemetry.power import PowerLimit, restore_power_limit, set_power_limits


def set_limits(gpus: tuple[int, ...], watts: float, holder: str) -> tuple[PowerLimit, ...]:
    """Give ``gpus`` the limit ``watts`` (see :func:`set_power_limits`) while holding their locks;
    :class:`~llm_dyno.core.jobs.gpu_lock.GpuBusy` when a sweep (or another change) holds one."""
    with gpu_locks(gpus, holder):
        return set_power_limits(gpus, watts)


def restore_limit(gpu: int, holder: str) -> PowerLimit:
    """Put back GPU ``gpu``'s remembered limit while holding its lock."""
    with gpu_locks((gpu,), holder):
        return restore_power_limit(gpu)
