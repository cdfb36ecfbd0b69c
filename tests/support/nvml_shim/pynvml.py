"""A ``pynvml`` that replays a real NVIDIA H200 recording, for subprocesses (the CLI) in tests.

Put this folder first on PYTHONPATH and set ``LLM_DYNO_TEST_NVML`` to a sampler recording
(``tests/fixtures/nvml/gpu_sampler.jsonl``: 95 samples of the app's own GpuSampler at 4 Hz on a real
H200, idle then under a bf16 matmul load; see that folder's README). The app's NVML code then reads
the recording as if it were the driver: the sample shown is the one at the same time since this
module was imported (from the first loaded sample on, looping), and the energy counter keeps rising
between samples (at the recorded power) and across loops, as the real counter does.
``nvmlDeviceSetPowerManagementLimit`` behaves as it does for root: the new limit is read back
afterwards; each set is appended to ``LLM_DYNO_TEST_NVML_SETS`` (``GPU MILLIWATTS``). The supported
clocks are a real H200's (``tests/fixtures/nvml/h200_supported_clocks.json``); locking the SM or memory
clock (``nvmlDeviceSet{Gpu,Memory}LockedClocks``) caps the clock read back, as a lock does, and each lock
and reset is appended to the same file (``GPU sm-lock MIN MAX``, ``GPU mem-reset``). With
``LLM_DYNO_TEST_NVML_NO_PERMISSION`` set every change is refused as for a user who is not root.
``LLM_DYNO_TEST_NVML_PERIOD_S`` (default 0.25 s) is the time between two samples of the recording, and
``LLM_DYNO_TEST_NVML_FROM_START`` replays from its first sample rather than from where the load starts.

Constants and error classes are the real nvidia-ml-py's: this is a fake only at the NVML boundary,
which cannot run without an NVIDIA GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

if __name__ != "pynvml":  # loaded under another name beside the real one (a test in this process)
    import pynvml as _real
else:  # shadowing the real one (first on PYTHONPATH): load it from the rest of the path
    _here = Path(__file__).resolve().parent
    _spec = importlib.machinery.PathFinder.find_spec(
        "pynvml", [p for p in sys.path if Path(p or ".").resolve() != _here]
    )
    assert _spec is not None and _spec.loader is not None, "nvidia-ml-py is not installed"
    _real = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_real)
    # nvidia-ml-py makes its NVMLError_* classes on sys.modules["pynvml"], which is this module while
    # it loads: make them on the real one, so that NVMLError(code) is NVMLError_NoPermission & co.
    _self = sys.modules[__name__]
    sys.modules[__name__] = _real
    try:
        _real._extractNVMLErrorsAsClasses()
    finally:
        sys.modules[__name__] = _self
globals().update({k: v for k, v in vars(_real).items() if k.isupper() or k.startswith("NVMLError")})
NVMLError = _real.NVMLError

_samples = [json.loads(line) for line in Path(os.environ["LLM_DYNO_TEST_NVML"]).read_text().splitlines()]
_readings: list[dict[str, Any]] = [s["readings"][0] for s in _samples if s.get("readings")]
# start where the load starts, so a short benchmark sees the GPU under load (or at the first sample,
# with LLM_DYNO_TEST_NVML_FROM_START: a recording cut to a window, replayed as it was)
_first_busy = next((i for i, r in enumerate(_readings) if (r.get("power_w") or 0) > 200), 0)
_loop = _readings[0 if os.environ.get("LLM_DYNO_TEST_NVML_FROM_START") else _first_busy :]
# the recorders sample at 4 Hz; a recording at the driver's own resolution says its step here
_period_s = float(os.environ.get("LLM_DYNO_TEST_NVML_PERIOD_S") or 0.25)
_t0 = time.monotonic()
_limit_mw: dict[int, int] = {}


def _now(index: int) -> dict[str, Any]:
    steps = (time.monotonic() - _t0) / _period_s
    loops, pos = divmod(int(steps), len(_loop))
    r = dict(_loop[pos])
    # the counter rises between recorded samples too (straight from one recorded value to the next, so
    # it never goes back, as the real counter never does), and across loops
    last = _loop[-1]["energy_j"] + _loop[-1]["power_w"] * _period_s  # where the loop's last step ends
    span = last - _loop[0]["energy_j"]
    following = _loop[pos + 1]["energy_j"] if pos + 1 < len(_loop) else last
    r["energy_j"] = r["energy_j"] + (steps - int(steps)) * (following - r["energy_j"]) + loops * span
    return r


def _value(index: int, key: str) -> Any:
    value = _now(index).get(key)
    if value is None:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)  # noqa: F821 - a real constant, copied above
    return value


def nvmlInit() -> None: ...
def nvmlShutdown() -> None: ...
def nvmlDeviceGetCount() -> int:
    return 1


def nvmlDeviceGetHandleByIndex(i: int) -> int:
    return i


def nvmlSystemGetDriverVersion() -> str:
    return str(_readings[0]["driver"])


def nvmlDeviceGetName(h: int) -> str:
    return str(_value(h, "name"))


def nvmlDeviceGetUUID(h: int) -> str:
    return str(_value(h, "uuid"))


def nvmlDeviceGetPowerUsage(h: int) -> int:
    return round(_value(h, "power_w") * 1000)


def nvmlDeviceGetTotalEnergyConsumption(h: int) -> int:
    return round(_value(h, "energy_j") * 1000)


def nvmlDeviceGetPowerManagementLimit(h: int) -> int:
    return _limit_mw.get(h, round(_value(h, "power_limit_w") * 1000))


def nvmlDeviceGetPowerManagementDefaultLimit(h: int) -> int:
    return round(_value(h, "default_limit_w") * 1000)


def nvmlDeviceGetPowerManagementLimitConstraints(h: int) -> tuple[int, int]:
    return round(_value(h, "min_limit_w") * 1000), round(_value(h, "max_limit_w") * 1000)


def nvmlDeviceGetEnforcedPowerLimit(h: int) -> int:
    return _limit_mw.get(h, round(_value(h, "enforced_limit_w") * 1000))


def nvmlDeviceGetUtilizationRates(h: int) -> Any:
    return SimpleNamespace(gpu=_value(h, "util_gpu_pct"), memory=_value(h, "util_mem_pct"))


def nvmlDeviceGetMemoryInfo(h: int) -> Any:
    used, total = _value(h, "mem_used_bytes"), _value(h, "mem_total_bytes")
    return SimpleNamespace(used=used, total=total, free=total - used)


def nvmlDeviceGetTemperatureV(h: int, sensor: int) -> int:
    return round(_value(h, "temperature_c"))


nvmlDeviceGetTemperature = nvmlDeviceGetTemperatureV


def nvmlDeviceGetClockInfo(h: int, clock: int) -> int:
    sm = clock == NVML_CLOCK_SM  # noqa: F821
    value = int(_value(h, "sm_clock_mhz" if sm else "mem_clock_mhz"))
    locked = _locked.get((h, "sm" if sm else "mem"))
    return min(value, locked) if locked is not None else value


def nvmlDeviceGetMaxClockInfo(h: int, clock: int) -> int:
    return int(_value(h, "max_sm_clock_mhz" if clock == NVML_CLOCK_SM else "max_mem_clock_mhz"))  # noqa: F821


def nvmlDeviceGetCurrentClocksEventReasons(h: int) -> int:
    return int(_value(h, "throttle_mask"))


def nvmlDeviceGetCurrPcieLinkGeneration(h: int) -> int:
    return int(_value(h, "pcie_gen"))


def nvmlDeviceGetMaxPcieLinkGeneration(h: int) -> int:
    return int(_value(h, "pcie_gen_max"))


def nvmlDeviceGetCurrPcieLinkWidth(h: int) -> int:
    return int(_value(h, "pcie_width"))


def nvmlDeviceGetMaxPcieLinkWidth(h: int) -> int:
    return int(_value(h, "pcie_width_max"))


def nvmlDeviceGetFanSpeed(h: int) -> int:
    return int(_value(h, "fan_pct"))  # "Not Supported" on the H200, as recorded


def nvmlDeviceGetMemoryBusWidth(h: int) -> int:
    return int(_value(h, "mem_bus_width_bits"))


def _denied(h: int, what: str) -> None:
    """With ``LLM_DYNO_TEST_NVML_NO_PERMISSION`` set, a change is refused as the driver refuses a user
    who is not root (NVML_ERROR_NO_PERMISSION); the refusal is recorded (``GPU denied WHAT``)."""
    if os.environ.get("LLM_DYNO_TEST_NVML_NO_PERMISSION"):
        _record(f"{h} denied {what}")
        raise NVMLError(NVML_ERROR_NO_PERMISSION)  # noqa: F821 - a real constant, copied above


def _record(line: str) -> None:
    log = os.environ.get("LLM_DYNO_TEST_NVML_SETS")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def nvmlDeviceSetPowerManagementLimit(h: int, limit_mw: int) -> None:
    _denied(h, "power")
    _limit_mw[h] = int(limit_mw)
    _record(f"{h} {limit_mw}")


# ---- clocks: the supported lists of a real H200 (record_clocks.py), locks as root would see them ----
_CLOCKS_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "nvml" / "h200_supported_clocks.json"
_CLOCKS = json.loads(_CLOCKS_FILE.read_text())
_gpu_clocks = _CLOCKS["gpus"][0]
_locked: dict[tuple[int, str], int] = {}


def nvmlDeviceGetSupportedMemoryClocks(h: int) -> list[int]:
    return [int(m) for m in _gpu_clocks["supported_mem_mhz"]]


def nvmlDeviceGetSupportedGraphicsClocks(h: int, mem_mhz: int) -> list[int]:
    listed = _gpu_clocks["supported_graphics_mhz"].get(str(int(mem_mhz)))
    if listed is None:
        raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)  # noqa: F821 - a real constant, copied above
    return [int(c) for c in listed]


def _lock(h: int, domain: str, lo: int, hi: int) -> None:
    _denied(h, f"{domain}-lock")
    _locked[(h, domain)] = int(hi)
    _record(f"{h} {domain}-lock {int(lo)} {int(hi)}")


def nvmlDeviceSetGpuLockedClocks(h: int, lo: int, hi: int) -> None:
    _lock(h, "sm", lo, hi)


def nvmlDeviceSetMemoryLockedClocks(h: int, lo: int, hi: int) -> None:
    _lock(h, "mem", lo, hi)


def nvmlDeviceResetGpuLockedClocks(h: int) -> None:
    _denied(h, "sm-reset")
    _locked.pop((h, "sm"), None)
    _record(f"{h} sm-reset")


def nvmlDeviceResetMemoryLockedClocks(h: int) -> None:
    _denied(h, "mem-reset")
    _locked.pop((h, "mem"), None)
    _record(f"{h} mem-reset")


def nvmlDeviceGetFieldValues(h: int, field_ids: list[int]) -> list[Any]:
    """Field values as the driver answers them: one result per field, each with its own return code.
    The instantaneous power (``NVML_FI_DEV_POWER_INSTANT``, mW) is replayed where the recording has it
    (``tests/fixtures/nvml/power_on_gpu``); any other field, or a recording without it, is "Not Supported",
    as for a driver without the field."""
    out = []
    for fid in field_ids:
        watts = _now(h).get("power_instant_w") if fid == NVML_FI_DEV_POWER_INSTANT else None  # noqa: F821
        ret = NVML_SUCCESS if watts is not None else NVML_ERROR_NOT_SUPPORTED  # noqa: F821
        out.append(
            SimpleNamespace(
                fieldId=fid, nvmlReturn=ret, value=SimpleNamespace(uiVal=round((watts or 0) * 1000))
            )
        )
    return out
