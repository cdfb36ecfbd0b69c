"""NVML wrapped once: lazy init, shutdown at exit, typed readings, "not available" instead of errors.

:class:`Nvml` talks to the ``pynvml`` module (the ``nvidia-ml-py`` package). Every query that the
GPU or driver does not support (fans on a data-centre card, PCIe on some VMs) comes back as None in
the :class:`GpuReading`; only a missing driver is an error, :class:`NvmlUnavailable`, whose
``reason`` says what to do. Units are converted here once: W, J, bytes, MHz, °C, percent.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, TypeVar

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.sampler import PeriodicSampler

T = TypeVar("T")

# Clock-event ("throttle") reason bits, as in nvml.h / pynvml (nvmlClocksEventReason*).
THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "GpuIdle"),
    (0x2, "ApplicationsClocksSetting"),
    (0x4, "SwPowerCap"),
    (0x8, "HwSlowdown"),
    (0x10, "SyncBoost"),
    (0x20, "SwThermalSlowdown"),
    (0x40, "HwThermalSlowdown"),
    (0x80, "HwPowerBrakeSlowdown"),
    (0x100, "DisplayClockSetting"),
)


def decode_throttle_reasons(mask: int | None) -> tuple[str, ...]:
    """The names of the bits set in a clocks-event mask (unknown bits as ``0x…``); () for None/0."""
    if not mask:
        return ()
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_REASONS:
        known |= bit
    if mask & ~known:
        names.append(f"0x{mask & ~known:x}")
    return tuple(names)


class NvmlUnavailable(DynoError):
    """NVML cannot be used on this machine; ``reason`` says why in the user's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, hint="GPU readings need an NVIDIA GPU with its driver on this machine")
        self.reason = reason


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one moment. None means "not available" (unsupported by this GPU or driver).

    ``energy_j`` is NVML's counter since the driver loaded; differences give energy per run.
    ``power_w`` is ``nvmlDeviceGetPowerUsage``: on Ampere and newer a 1-second average, which lags load
    changes; ``power_instant_w`` is the instantaneous field (``NVML_FI_DEV_POWER_INSTANT``) where the
    driver has it (None elsewhere).
    ``throttle_mask`` is the clocks-event bit mask (see :data:`THROTTLE_REASONS`).
    """

    index: int
    taken_at: float
    source: str = "nvml"  # or "nvidia-smi" for readings taken inside a remote container
    name: str | None = None
    uuid: str | None = None
    driver: str | None = None
    power_w: float | None = None
    energy_j: float | None = None
    power_limit_w: float | None = None
    default_limit_w: float | None = None
    min_limit_w: float | None = None
    max_limit_w: float | None = None
    enforced_limit_w: float | None = None
    util_gpu_pct: float | None = None
    util_mem_pct: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    temperature_c: float | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    throttle_mask: int | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    fan_pct: float | None = None
    mem_bus_width_bits: int | None = None
    power_instant_w: float | None = None

    @property
    def throttle_reasons(self) -> tuple[str, ...]:
        """The decoded throttle reasons (e.g. ``("SwPowerCap",)`` under full load)."""
        return decode_throttle_reasons(self.throttle_mask)

    @property
    def memory_bandwidth_bytes_s(self) -> float | None:
        """Peak memory bandwidth at the current memory clock: clock × bus width × 2 (DDR) / 8."""
        if self.mem_clock_mhz is None or self.mem_bus_width_bits is None:
            return None
        return self.mem_clock_mhz * 1e6 * self.mem_bus_width_bits * 2 / 8

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the derived fields added."""
        out = asdict(self)
        if out["power_instant_w"] is None:  # a driver without the field: stored as earlier readings were
            del out["power_instant_w"]
        out["throttle_reasons"] = list(self.throttle_reasons)
        out["memory_bandwidth_bytes_s"] = self.memory_bandwidth_bytes_s
        return out


def reading_from_dict(data: dict[str, Any]) -> GpuReading:
    """A reading stored with :meth:`GpuReading.to_dict` (derived fields and unknown keys ignored)."""
    names = {f.name for f in fields(GpuReading)}
    return GpuReading(**{k: v for k, v in data.items() if k in names})


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _unavailable_reason(lib: Any, exc: Exception) -> str:
    """Turn an nvmlInit failure into a sentence a user understands."""
    pairs = (
        ("NVMLError_LibraryNotFound", "NVIDIA driver not found (libnvidia-ml.so.1 missing)"),
        (
            "NVMLError_DriverNotLoaded",
            "NVIDIA driver not loaded (is the kernel module loaded? try nvidia-smi)",
        ),
        ("NVMLError_NoPermission", "no permission to use the NVIDIA driver (/dev/nvidia* access)"),
        (
            "NVMLError_LibRmVersionMismatch",
            "NVIDIA driver/library version mismatch (reboot after a driver update)",
        ),
    )
    for cls_name, reason in pairs:
        cls = getattr(lib, cls_name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return reason
    return f"NVML failed to initialise: {exc}"


class Nvml:
    """The NVML session of this process. ``lib`` is the ``pynvml`` module (tests pass a replay).

    Initialised on first use; shut down at interpreter exit. Thread-safe: NVML itself is, and the
    init is guarded by a lock.
    """

    def __init__(self, lib: Any | None = None) -> None:
        self._lib: Any = lib
        self._lock = threading.Lock()
        self._ready = False
        self._error: str | None = None
        self._no_instant_field = False
        self._handles: dict[int, Any] = {}

    @property
    def lib(self) -> Any:
        """The pynvml module in use, importing it on first call."""
        if self._lib is None:
            try:
                import pynvml
            except ImportError as exc:
                raise NvmlUnavailable("nvidia-ml-py is not installed (pip install nvidia-ml-py)") from exc
            self._lib = pynvml
        return self._lib

    def ensure(self) -> Any:
        """Initialise NVML once and return the module; raise :class:`NvmlUnavailable` if it cannot."""
        with self._lock:
            if self._ready:
                return self._lib
            if self._error is not None:
                raise NvmlUnavailable(self._error)
            lib = self.lib
            try:
                lib.nvmlInit()
            except lib.NVMLError as exc:
                self._error = _unavailable_reason(lib, exc)
                raise NvmlUnavailable(self._error) from exc
            self._ready = True
            atexit.register(self.shutdown)
            return lib

    def available(self) -> str | None:
        """None when NVML works, else the reason it does not."""
        try:
            self.ensure()
        except NvmlUnavailable as exc:
            return exc.reason
        return None

    def shutdown(self) -> None:
        """Release NVML (called at exit; harmless when never initialised)."""
        with self._lock:
            if self._ready:
                with contextlib.suppress(Exception):  # at exit there is nobody left to tell
                    self._lib.nvmlShutdown()
                self._ready = False
                self._handles.clear()

    def _try(self, fn: Callable[..., T], *args: Any) -> T | None:
        try:
            return fn(*args)
        except self._lib.NVMLError:
            return None

    def device_count(self) -> int:
        """How many GPUs NVML sees."""
        return int(self.ensure().nvmlDeviceGetCount())

    def handle(self, index: int) -> Any:
        """The NVML handle of GPU ``index``; a clear error for an index that does not exist."""
        lib = self.ensure()
        count = int(lib.nvmlDeviceGetCount())
        if not 0 <= index < count:
            raise DynoError(f"no GPU {index}: this machine has {count} (indices 0..{count - 1})")
        return lib.nvmlDeviceGetHandleByIndex(index)

    def read(self, index: int) -> GpuReading:
        """Read every supported value of GPU ``index`` once."""
        lib = self.ensure()
        h = self.handle(index)
        t = self._try
        mw = 1000.0

        def watts(fn: Callable[..., Any]) -> float | None:
            v = t(fn, h)
            return None if v is None else v / mw

        constraints = t(lib.nvmlDeviceGetPowerManagementLimitConstraints, h)
        util = t(lib.nvmlDeviceGetUtilizationRates, h)
        mem = t(lib.nvmlDeviceGetMemoryInfo, h)
        name, uuid, driver = (
            t(lib.nvmlDeviceGetName, h),
            t(lib.nvmlDeviceGetUUID, h),
            t(lib.nvmlSystemGetDriverVersion),
        )
        reading = GpuReading(
            index=index,
            taken_at=0.0,
            name=None if name is None else _text(name),
            uuid=None if uuid is None else _text(uuid),
            driver=None if driver is None else _text(driver),
            power_w=watts(lib.nvmlDeviceGetPowerUsage),
            power_limit_w=watts(lib.nvmlDeviceGetPowerManagementLimit),
            default_limit_w=watts(lib.nvmlDeviceGetPowerManagementDefaultLimit),
            min_limit_w=None if constraints is None else constraints[0] / mw,
            max_limit_w=None if constraints is None else constraints[1] / mw,
            enforced_limit_w=watts(lib.nvmlDeviceGetEnforcedPowerLimit),
            util_gpu_pct=None if util is None else float(util.gpu),
            util_mem_pct=None if util is None else float(util.memory),
            mem_used_bytes=None if mem is None else int(mem.used),
            mem_total_bytes=None if mem is None else int(mem.total),
            temperature_c=self._temperature(h),
            sm_clock_mhz=t(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_SM),
            mem_clock_mhz=t(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_MEM),
            max_sm_clock_mhz=t(lib.nvmlDeviceGetMaxClockInfo, h, lib.NVML_CLOCK_SM),
            max_mem_clock_mhz=t(lib.nvmlDeviceGetMaxClockInfo, h, lib.NVML_CLOCK_MEM),
            throttle_mask=self._throttle(h),
            pcie_gen=t(lib.nvmlDeviceGetCurrPcieLinkGeneration, h),
            pcie_gen_max=t(lib.nvmlDeviceGetMaxPcieLinkGeneration, h),
            pcie_width=t(lib.nvmlDeviceGetCurrPcieLinkWidth, h),
            pcie_width_max=t(lib.nvmlDeviceGetMaxPcieLinkWidth, h),
            fan_pct=t(lib.nvmlDeviceGetFanSpeed, h),
            mem_bus_width_bits=t(lib.nvmlDeviceGetMemoryBusWidth, h),
            power_instant_w=self._instant_power(h),
        )
        # the energy counter last, and the time at once after it: a run's mean power is the counter's
        # rise over the time between two readings, so the time must be the counter's (it steps every
        # ~100 ms on an H200; stamped after the other ~20 calls it was one step off now and then)
        energy = t(lib.nvmlDeviceGetTotalEnergyConsumption, h)
        return replace(
            reading, energy_j=None if energy is None else energy / 1000.0, taken_at=time.monotonic()
        )

    def instant_power_w(self, index: int) -> float | None:
        """GPU ``index``'s instantaneous power (W): one field-values call, cheap enough to poll at tens
        of Hz beside the full :meth:`read` (None where the driver lacks the field)."""
        self.ensure()
        h = self._handles.get(index)
        if h is None:  # looked up once: each poll is then the one field-values call
            h = self._handles[index] = self.handle(index)
        return self._instant_power(h)

    def _instant_power(self, h: Any) -> float | None:
        """Instantaneous power (W) from NVML's field values, or None where the driver lacks the field."""
        lib = self._lib
        field_id = getattr(lib, "NVML_FI_DEV_POWER_INSTANT", None)
        getter = getattr(lib, "nvmlDeviceGetFieldValues", None)
        if field_id is None or getter is None or self._no_instant_field:
            return None
        values = self._try(getter, h, [field_id])
        value = values[0] if values else None
        if value is None or getattr(value, "nvmlReturn", 1) != 0:
            self._no_instant_field = True  # not supported here: do not ask on every reading
            return None
        return float(value.value.uiVal) / 1000.0

    def _temperature(self, h: Any) -> float | None:
        lib = self._lib
        # NVML 13 deprecates nvmlDeviceGetTemperature in favour of the versioned call.
        getter = getattr(lib, "nvmlDeviceGetTemperatureV", None)
        if getter is not None:
            value = self._try(getter, h, lib.NVML_TEMPERATURE_GPU)
            if value is not None:
                return float(value)
        value = self._try(lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU)
        return None if value is None else float(value)

    def _throttle(self, h: Any) -> int | None:
        lib = self._lib
        # "ThrottleReasons" was renamed "EventReasons"; old bindings have only the first.
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(lib, name, None)
            if fn is not None:
                value = self._try(fn, h)
                if value is not None:
                    return int(value)
        return None

    def read_all(self) -> tuple[GpuReading, ...]:
        """A reading of every GPU."""
        return tuple(self.read(i) for i in range(self.device_count()))


_shared: Nvml | None = None
_shared_lock = threading.Lock()


def nvml() -> Nvml:
    """The process-wide :class:`Nvml` (created on first call, initialised on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Nvml()
        return _shared


@dataclass(frozen=True)
class GpuSample:
    """One tick of a :class:`GpuSampler`: readings of the watched GPUs, or why there are none."""

    taken_at: float
    readings: tuple[GpuReading, ...]
    error: str | None = None


class GpuSampler(PeriodicSampler[GpuSample]):
    """Read GPUs every ``interval_s`` seconds on a thread and pass :class:`GpuSample` to ``sink``.

    ``gpus`` None watches every GPU. Without a driver each sample carries the reason in ``error``.
    """

    def __init__(
        self,
        sink: Callable[[GpuSample], None],
        *,
        interval_s: float = 1.0,
        gpus: tuple[int, ...] | None = None,
        session: Nvml | None = None,
        max_samples: int | None = None,
    ) -> None:
        self._nvml = session or nvml()
        self._gpus = gpus
        super().__init__(
            self._read_once, sink, interval_s=interval_s, name="gpu-sampler", max_samples=max_samples
        )

    @property
    def gpus(self) -> tuple[int, ...] | None:
        """The GPU indices read at each tick (None: every GPU)."""
        return self._gpus

    def _read_once(self) -> GpuSample:
        try:
            indices = self._gpus if self._gpus is not None else tuple(range(self._nvml.device_count()))
            readings = tuple(self._nvml.read(i) for i in indices)
        except DynoError as exc:
            return GpuSample(time.monotonic(), (), error=exc.message)
        except Exception as exc:  # e.g. NVMLError_GpuIsLost: report it and keep sampling
            return GpuSample(time.monotonic(), (), error=f"{type(exc).__name__}: {exc}")
        return GpuSample(time.monotonic(), readings)
