"""nvidia-smi CSV recorded on a real H200 (idle and under a bf16 matmul load) parses into GpuReading."""

from __future__ import annotations

import pytest

from llm_dyno.core.runtime.remote_gpu import RemoteGpuError, parse_smi_csv, read_remote_gpus, smi_command
from tests.core.telemetry.nvml_replay import FIXTURES


def test_idle() -> None:
    (r,) = parse_smi_csv((FIXTURES / "smi_idle.csv").read_text(), taken_at=1.0)
    assert (r.index, r.name, r.driver, r.source) == (0, "NVIDIA H200", "580.159.04", "nvidia-smi")
    assert r.power_w == 80.89
    assert (r.power_limit_w, r.default_limit_w, r.min_limit_w, r.max_limit_w) == (700.0, 700.0, 200.0, 700.0)
    assert r.mem_total_bytes == 143771 * 1024 * 1024
    assert r.throttle_reasons == ("GpuIdle",)
    assert r.fan_pct is None  # "[N/A]"
    assert r.energy_j is None and r.memory_bandwidth_bytes_s is None  # nvidia-smi has neither


def test_load() -> None:
    (r,) = parse_smi_csv((FIXTURES / "smi_load.csv").read_text())
    assert r.power_w == 688.73
    assert (r.util_gpu_pct, r.util_mem_pct) == (99.0, 24.0)
    assert r.throttle_reasons == ("SwPowerCap",)
    assert (r.sm_clock_mhz, r.max_sm_clock_mhz) == (1410, 1980)
    assert (r.pcie_gen, r.pcie_width) == (5, 16)


def test_not_supported_and_bad_lines() -> None:
    line = (FIXTURES / "smi_idle.csv").read_text().strip().replace("80.89", "[Not Supported]")
    (r,) = parse_smi_csv(line)
    assert r.power_w is None
    with pytest.raises(RemoteGpuError, match="fields"):
        parse_smi_csv("0, NVIDIA H200, 12")


def test_read_through_exec_run_like_callable() -> None:
    recorded = (FIXTURES / "smi_load.csv").read_bytes()
    calls: list[list[str]] = []

    def exec_run(cmd: list[str]) -> tuple[int, bytes]:
        calls.append(cmd)
        return 0, recorded

    (r,) = read_remote_gpus(exec_run)
    assert calls == [smi_command()] and r.power_w == 688.73

    def failing(cmd: list[str]) -> tuple[int, bytes]:
        return 127, b'OCI runtime exec failed: exec: "nvidia-smi": executable file not found in $PATH'

    with pytest.raises(RemoteGpuError, match="nvidia-smi failed in vllm-a"):
        read_remote_gpus(failing, container="vllm-a")
