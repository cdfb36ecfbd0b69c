"""GPU readings for a server on a remote Docker host, from ``nvidia-smi`` inside its container.

NVML sees only local GPUs, so for a profile on another host the app runs ``nvidia-smi --query-gpu``
through ``docker exec`` and parses the CSV into the same :class:`GpuReading` as local NVML readings.
``[N/A]`` and ``[Not Supported]`` become None. nvidia-smi has no energy counter or bus width, so
those stay None.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.nvml import GpuReading

QUERY_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "driver_version",
    "power.draw", "power.limit", "power.default_limit", "power.min_limit", "power.max_limit",
    "enforced.power.limit",
    "utilization.gpu", "utilization.memory", "memory.used", "memory.total", "temperature.gpu",
    "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
    "clocks_event_reasons.active",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "fan.speed",
)  # fmt: skip
# Drivers before 535 know the reasons only by their old name.
_OLD_REASON_FIELD = "clocks_throttle_reasons.active"
_MIB = 1024 * 1024

ExecRun = Callable[[list[str]], Any]
"""``container.exec_run``-like: takes the argument list, returns ``(exit_code, output_bytes)``
(docker's ``ExecResult`` is such a tuple)."""


class RemoteGpuError(DynoError):
    """nvidia-smi could not be run in the container or its output was not understood."""


def smi_command(fields: Sequence[str] = QUERY_FIELDS) -> list[str]:
    """The nvidia-smi argument list (no shell) for a CSV query of ``fields``."""
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]


def _missing(value: str) -> bool:
    v = value.strip()
    return not v or (v.startswith("[") and v.endswith("]")) or v in {"N/A", "Not Supported"}


def _float(value: str) -> float | None:
    return None if _missing(value) else float(value)


def _int(value: str) -> int | None:
    # hex for the reason mask ("0x0000000000000004"), decimal elsewhere
    return None if _missing(value) else int(value.strip(), 0)


def _str(value: str) -> str | None:
    return None if _missing(value) else value.strip()


def _mib(value: str) -> int | None:
    v = _float(value)
    return None if v is None else int(v * _MIB)


def parse_smi_csv(text: str, taken_at: float | None = None) -> tuple[GpuReading, ...]:
    """Parse ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`` output."""
    now = time.monotonic() if taken_at is None else taken_at
    readings: list[GpuReading] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(QUERY_FIELDS):
            raise RemoteGpuError(
                f"nvidia-smi line {lineno} has {len(cells)} fields, expected {len(QUERY_FIELDS)}: {line!r}"
            )
        v = dict(zip(QUERY_FIELDS, cells, strict=True))
        try:
            readings.append(
                GpuReading(
                    index=int(v["index"]),
                    taken_at=now,
                    source="nvidia-smi",
                    name=_str(v["name"]),
                    uuid=_str(v["uuid"]),
                    driver=_str(v["driver_version"]),
                    power_w=_float(v["power.draw"]),
                    power_limit_w=_float(v["power.limit"]),
                    default_limit_w=_float(v["power.default_limit"]),
                    min_limit_w=_float(v["power.min_limit"]),
                    max_limit_w=_float(v["power.max_limit"]),
                    enforced_limit_w=_float(v["enforced.power.limit"]),
                    util_gpu_pct=_float(v["utilization.gpu"]),
                    util_mem_pct=_float(v["utilization.memory"]),
                    mem_used_bytes=_mib(v["memory.used"]),
                    mem_total_bytes=_mib(v["memory.total"]),
                    temperature_c=_float(v["temperature.gpu"]),
                    sm_clock_mhz=_int(v["clocks.sm"]),
                    mem_clock_mhz=_int(v["clocks.mem"]),
                    max_sm_clock_mhz=_int(v["clocks.max.sm"]),
                    max_mem_clock_mhz=_int(v["clocks.max.mem"]),
                    throttle_mask=_int(v["clocks_event_reasons.active"]),
                    pcie_gen=_int(v["pcie.link.gen.current"]),
                    pcie_gen_max=_int(v["pcie.link.gen.max"]),
                    pcie_width=_int(v["pcie.link.width.current"]),
                    pcie_width_max=_int(v["pcie.link.width.max"]),
                    fan_pct=_float(v["fan.speed"]),
                )
            )
        except ValueError as exc:
            raise RemoteGpuError(f"nvidia-smi line {lineno}: unexpected value ({exc}): {line!r}") from exc
    return tuple(readings)


def _run(exec_run: ExecRun, cmd: list[str]) -> tuple[int, str]:
    result = exec_run(cmd)
    code, output = result[0], result[1]
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    return int(code if code is not None else 0), text


def read_remote_gpus(exec_run: ExecRun, *, container: str = "container") -> tuple[GpuReading, ...]:
    """Run nvidia-smi through ``exec_run`` (e.g. ``docker_container.exec_run``) and parse it."""
    cmd = smi_command()
    code, text = _run(exec_run, cmd)
    if code != 0 and "clocks_event_reasons" in text:  # older driver: retry with the old field name
        fields = tuple(_OLD_REASON_FIELD if f == "clocks_event_reasons.active" else f for f in QUERY_FIELDS)
        code, text = _run(exec_run, smi_command(fields))
    if code != 0:
        raise RemoteGpuError(
            f"nvidia-smi failed in {container} (exit {code}): {text.strip()[:300]}",
            hint="does the container have GPU access (--gpus / device_requests) and nvidia-smi?",
        )
    return parse_smi_csv(text)
