"""Lock a GPU's SM or memory clock to one supported value, and reset the locks.

A locked clock is the knob that saves energy where a power cap never engages (an H200 decoding draws
137–300 W of its 700 W limit). Values are checked against the GPU's own list of supported clocks
(``nvmlDeviceGetSupportedMemoryClocks`` / ``nvmlDeviceGetSupportedGraphicsClocks``) before anything is
set. Locking needs root, as a power limit does, and goes the same way (:mod:`.power`): NVML directly
(as root), and on ``NVML_ERROR_NO_PERMISSION`` the privileged helper through ``pkexec`` (``lock-clocks
GPU sm|mem MHZ`` / ``reset-clocks GPU``, an argument list), which checks the value against the GPU's
list again as root. A lock does not survive a reboot or a driver reload; :func:`reset_clocks` removes
both locks.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass
from enum import StrEnum

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry import power
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


def _helper(gpu: int, args: list[str], exc: Exception, runner: power.Runner) -> None:
    """Run the privileged helper (``pkexec HELPER ARGS``) after NVML said "no permission"."""
    helper = power.find_helper()
    if helper is None or shutil.which("pkexec") is None:
        raise ClockLockError(
            f"GPU {gpu}: locking clocks needs root (NVML: {exc})",
            hint="run as root (sudo llm-dyno tune …), or install the privileged helper with pkexec "
            "(packaging/llm-dyno-power-helper, as for power limits)",
        )
    done = runner(["pkexec", str(helper), *args])
    if done.returncode != 0:
        detail = (done.stderr or done.stdout or "").strip()[:300]
        raise ClockLockError(f"GPU {gpu}: the power helper failed (exit {done.returncode}): {detail}")


def lock_clock(
    gpu: int,
    domain: ClockDomain,
    mhz: int,
    *,
    session: Nvml | None = None,
    runner: power.Runner | None = None,
) -> None:
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
        if not isinstance(exc, lib.NVMLError_NoPermission):
            raise ClockLockError(f"GPU {gpu}: NVML refused to lock the {domain.value} clock: {exc}") from exc
        what = "mem" if domain is ClockDomain.MEMORY else "sm"
        _helper(gpu, ["lock-clocks", str(int(gpu)), what, str(int(mhz))], exc, runner or _run)


def reset_clocks(
    gpu: int,
    domains: tuple[ClockDomain, ...] = tuple(ClockDomain),
    *,
    session: Nvml | None = None,
    runner: power.Runner | None = None,
) -> None:
    """Remove the locks of ``domains`` (both by default) on GPU ``gpu``; every domain is tried even
    when one fails, then the first failure is raised. Without permission the helper resets both."""
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
            if isinstance(exc, lib.NVMLError_NoPermission):
                _helper(gpu, ["reset-clocks", str(int(gpu))], exc, runner or _run)
                return
            first = first or ClockLockError(
                f"GPU {gpu}: NVML could not reset the {domain.value} clock: {exc}"
            )
    if first is not None:
        raise first


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)  # noqa: S603


def clock_control_unavailable_reason(gpu: int = 0) -> str | None:
    """Why clocks cannot be locked here (None when they can): no driver or no list, or neither root
    nor the helper."""
    try:
        read_supported_clocks(gpu)
    except DynoError as exc:
        return f"Clock locking is unavailable: {exc.message}"
    if os.geteuid() == 0:
        return None
    try:
        helper = power.find_helper()
    except DynoError as exc:
        return f"Clock locking is unavailable: {exc.message}"
    if helper is None or shutil.which("pkexec") is None:
        return (
            "Locking GPU clocks needs root or the privileged helper "
            "(packaging/llm-dyno-power-helper with pkexec)."
        )
    return None
