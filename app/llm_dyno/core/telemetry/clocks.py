"""Lock a GPU's SM or memory clock to one supported value, and reset the locks.

A locked clock is the knob that saves energy where a power cap never engages (an H200 decoding draws
137–300 W of its 700 W limit). Values are checked against the GPU's own list of supported clocks
(``nvmlDeviceGetSupportedMemoryClocks`` / ``nvmlDeviceGetSupportedGraphicsClocks``) before anything is
set. Locking needs root, as a power limit does: NVML is called directly (as root), and without
permission the refusal says so; the privileged power helper does not lock clocks yet. A lock does not
survive a reboot or a driver reload; :func:`reset_clocks` removes both locks.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from enum import StrEnum

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.nvml import Nvml, nvml


class ClockLockError(DynoError):
    """A clock cannot be read, is not supported by the GPU, or cannot be locked."""


class ClockDomain(StrEnum):
    """Which clock a lock applies to."""

    SM = "sm"
    MEMORY = "memory"


@dataclass(frozen=True)
class SupportedClocks:
    """A GPU's supported memory clocks and, for the highest of them, its supported SM clocks (MHz)."""

    gpu: int
    memory_mhz: tuple[int, ...]
    sm_mhz: tuple[int, ...]

    def values(self, domain: ClockDomain) -> tuple[int, ...]:
        """The supported values of ``domain``, highest first."""
        return self.memory_mhz if domain is ClockDomain.MEMORY else self.sm_mhz

    def check(self, domain: ClockDomain, mhz: int) -> None:
        """Raise :class:`ClockLockError` unless ``mhz`` is one of the GPU's supported clocks."""
        values = self.values(domain)
        if mhz in values:
            return
        nearest = min(values, key=lambda v: abs(v - mhz)) if values else None
        listing = _describe(values)
        raise ClockLockError(
            f"GPU {self.gpu}: {mhz} MHz is not a supported {domain.value} clock ({listing})",
            hint=f"the nearest supported value is {nearest} MHz" if nearest is not None else None,
        )


def _describe(values: tuple[int, ...]) -> str:
    if not values:
        return "the GPU lists none"
    if len(values) <= 6:
        return "supported: " + ", ".join(str(v) for v in values) + " MHz"
    steps = {a - b for a, b in itertools.pairwise(values)}
    step = f" in steps of {steps.pop()} MHz" if len(steps) == 1 else ""
    return f"supported: {min(values)}–{max(values)} MHz{step}"


def read_supported_clocks(gpu: int = 0, session: Nvml | None = None) -> SupportedClocks:
    """The supported clocks of GPU ``gpu``; :class:`ClockLockError` when the driver lists none."""
    s = session or nvml()
    lib = s.ensure()
    handle = s.handle(gpu)
    try:
        memory = sorted((int(m) for m in lib.nvmlDeviceGetSupportedMemoryClocks(handle)), reverse=True)
        sm = (
            sorted(
                (int(c) for c in lib.nvmlDeviceGetSupportedGraphicsClocks(handle, memory[0])), reverse=True
            )
            if memory
            else []
        )
    except lib.NVMLError as exc:
        raise ClockLockError(f"GPU {gpu}: the supported clocks cannot be read: {exc}") from exc
    return SupportedClocks(gpu, tuple(memory), tuple(sm))


def _permission(gpu: int, exc: Exception) -> ClockLockError:
    return ClockLockError(
        f"GPU {gpu}: locking clocks needs root (NVML: {exc})",
        hint="run as root (sudo llm-dyno tune …); the privileged helper sets power limits only",
    )


def lock_clock(gpu: int, domain: ClockDomain, mhz: int, *, session: Nvml | None = None) -> None:
    """Lock ``domain`` of GPU ``gpu`` at ``mhz`` (min = max), checked against the supported clocks."""
    s = session or nvml()
    read_supported_clocks(gpu, s).check(domain, mhz)
    lib = s.ensure()
    handle = s.handle(gpu)
    setter = (
        lib.nvmlDeviceSetMemoryLockedClocks
        if domain is ClockDomain.MEMORY
        else lib.nvmlDeviceSetGpuLockedClocks
    )
    try:
        setter(handle, int(mhz), int(mhz))
    except lib.NVMLError as exc:
        if isinstance(exc, lib.NVMLError_NoPermission):
            raise _permission(gpu, exc) from exc
        raise ClockLockError(f"GPU {gpu}: NVML refused to lock the {domain.value} clock: {exc}") from exc


def reset_clocks(gpu: int, domains: tuple[ClockDomain, ...] = tuple(ClockDomain), *,
                 session: Nvml | None = None) -> None:  # fmt: skip
    """Remove the locks of ``domains`` (both by default) on GPU ``gpu``; every domain is tried even
    when one fails, then the first failure is raised."""
    s = session or nvml()
    lib = s.ensure()
    handle = s.handle(gpu)
    first: ClockLockError | None = None
    for domain in domains:
        reset = (
            lib.nvmlDeviceResetMemoryLockedClocks
            if domain is ClockDomain.MEMORY
            else lib.nvmlDeviceResetGpuLockedClocks
        )
        try:
            reset(handle)
        except lib.NVMLError as exc:
            first = first or ClockLockError(
                f"GPU {gpu}: NVML could not reset the {domain.value} clock: {exc}"
            )
    if first is not None:
        raise first


def clock_control_unavailable_reason(gpu: int = 0) -> str | None:
    """Why clocks cannot be locked here (None when they can): no driver or no list, or not root."""
    try:
        read_supported_clocks(gpu)
    except DynoError as exc:
        return f"Clock locking is unavailable: {exc.message}"
    if os.geteuid() != 0:
        return "Locking GPU clocks needs root (the privileged helper sets power limits only)."
    return None
