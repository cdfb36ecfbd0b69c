"""A pynvml stand-in that replays values recorded on a real NVIDIA H200 (read-only recordings).

The only fake in the telemetry tests, and only at the pynvml boundary. Values come from
``tests/fixtures/nvml/raw_idle.json`` / ``raw_load.json`` (recorded by ``record_on_gpu.py``) or from
the ``idle``/``after`` lines of ``08_nvml_h200_idle_and_load.txt`` (the shared reference sample).
Errors are the real ``pynvml.NVMLError`` subclasses, raised the way pynvml raises them: fan speed
was "Not Supported" on that GPU, and a set call by a non-root user is NVML_ERROR_NO_PERMISSION.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvml"


def _from_sample08(which: str) -> dict[str, Any]:
    lines = (FIXTURES / "08_nvml_h200_idle_and_load.txt").read_text().splitlines()
    head = {}
    for line in lines:
        if line.startswith("driver "):
            head["driver"] = line.split()[1]
        if line.startswith("name "):
            name_part, uuid = line[len("name ") :].split(" uuid ")
            head["name"], head["uuid"] = name_part, uuid
        if line.startswith(which + " {"):
            return {**head, **json.loads(line[len(which) + 1 :])}
    raise KeyError(which)


def load_recording(which: str) -> dict[str, Any]:
    """``raw_idle`` / ``raw_load`` (this repo's H200 recording) or ``08:idle`` / ``08:after``."""
    if which.startswith("08:"):
        return _from_sample08(which[3:])
    data: dict[str, Any] = json.loads((FIXTURES / f"{which}.json").read_text())
    data.setdefault("driver", "580.159.04")
    return data


class ReplayNvml:
    """Module-like object with the pynvml functions the app calls, answering from a recording."""

    def __init__(
        self, recording: dict[str, Any], *, set_error: int = pynvml.NVML_ERROR_NO_PERMISSION
    ) -> None:
        self.rec = recording
        self.set_error = set_error
        self.set_calls: list[tuple[int, int]] = []
        self.limit_mw = recording["limit_mw"]

    def __getattr__(self, name: str) -> Any:  # constants and error classes: the real ones
        return getattr(pynvml, name)

    def _value(self, key: str) -> Any:
        v = self.rec.get(key)
        if v is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if isinstance(v, str) and v.startswith("ERR:"):
            code = {"Not Supported": pynvml.NVML_ERROR_NOT_SUPPORTED}.get(v[4:], pynvml.NVML_ERROR_UNKNOWN)
            raise pynvml.NVMLError(code)
        return v

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"handle{i}"

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self.rec["driver"])

    def nvmlDeviceGetName(self, h: Any) -> str:
        return str(self._value("name"))

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return str(self._value("uuid"))

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        return int(self._value("power_mw"))

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:
        return int(self._value("energy_mj"))

    def nvmlDeviceGetPowerManagementLimit(self, h: Any) -> int:
        return int(self.limit_mw)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: Any) -> int:
        return int(self._value("default_limit_mw"))

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: Any) -> tuple[int, int]:
        lo, hi = self._value("constraints_mw")
        return int(lo), int(hi)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        return int(self._value("enforced_mw"))

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
        gpu, mem = self._value("util")
        return SimpleNamespace(gpu=gpu, memory=mem)

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        used, total = self._value("mem")
        return SimpleNamespace(used=used, total=total, free=total - used)

    def nvmlDeviceGetTemperatureV(self, h: Any, sensor: int) -> int:
        return int(self._value("temp_c"))

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        return int(self._value("temp_c"))

    def nvmlDeviceGetClockInfo(self, h: Any, clock: int) -> int:
        return int(self._value("sm_mhz" if clock == pynvml.NVML_CLOCK_SM else "mem_mhz"))

    def nvmlDeviceGetMaxClockInfo(self, h: Any, clock: int) -> int:
        return int(self._value("max_sm_mhz" if clock == pynvml.NVML_CLOCK_SM else "max_mem_mhz"))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return int(self._value("throttle"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any) -> int:
        return int(self._value("pcie_gen"))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any) -> int:
        return int(self._value("pcie_gen_max"))

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any) -> int:
        return int(self._value("pcie_width"))

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any) -> int:
        return int(self._value("pcie_width_max"))

    def nvmlDeviceGetFanSpeed(self, h: Any) -> int:
        return int(self._value("fan"))

    def nvmlDeviceGetMemoryBusWidth(self, h: Any) -> int:
        return int(self._value("bus_width"))

    def nvmlDeviceSetPowerManagementLimit(self, h: Any, limit_mw: int) -> None:
        self.set_calls.append((0, limit_mw))
        if self.set_error:
            raise pynvml.NVMLError(self.set_error)
        self.limit_mw = limit_mw  # the root path: the driver takes the new limit
