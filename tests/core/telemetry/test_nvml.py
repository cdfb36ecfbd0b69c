"""NVML: the no-driver path on this machine, and readings replayed from a real H200."""

from __future__ import annotations

import itertools
import json
import threading

import pynvml
import pytest

from llm_dyno.core.telemetry.nvml import (
    GpuSample,
    GpuSampler,
    Nvml,
    NvmlUnavailable,
    decode_throttle_reasons,
)
from tests.core.telemetry.nvml_replay import FIXTURES, ReplayNvml, load_recording


def _has_driver() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(_has_driver(), reason="this machine has an NVIDIA driver")
def test_no_driver_says_so_and_never_raises_raw_errors() -> None:
    session = Nvml()  # the real pynvml
    reason = session.available()
    assert reason == "NVIDIA driver not found (libnvidia-ml.so.1 missing)"
    with pytest.raises(NvmlUnavailable, match=r"libnvidia-ml\.so\.1"):
        session.read(0)
    session.shutdown()  # harmless when never initialised


@pytest.mark.skipif(_has_driver(), reason="this machine has an NVIDIA driver")
def test_sampler_without_driver_reports_and_stops_cleanly() -> None:
    got: list[GpuSample] = []
    sampler = GpuSampler(got.append, interval_s=0.02, session=Nvml(), max_samples=3)
    sampler.start()
    sampler.join(5)
    assert not sampler.running
    assert len(got) == 3 and all(s.error and "driver not found" in s.error and not s.readings for s in got)


def test_replayed_idle_reading_units_and_not_supported_fan() -> None:
    r = Nvml(ReplayNvml(load_recording("raw_idle"))).read(0)
    assert r.name == "NVIDIA H200"
    assert r.power_w == pytest.approx(80.897)
    assert r.energy_j == pytest.approx(3284.648)
    assert (r.power_limit_w, r.default_limit_w, r.enforced_limit_w) == (700.0, 700.0, 700.0)
    assert (r.min_limit_w, r.max_limit_w) == (200.0, 700.0)
    assert r.fan_pct is None  # "Not Supported" on this GPU: n/a, not an error
    assert r.throttle_reasons == ("GpuIdle",)
    assert (r.pcie_gen, r.pcie_gen_max, r.pcie_width, r.pcie_width_max) == (5, 5, 16, 16)
    assert r.mem_total_bytes == 150754820096
    # 3201 MHz x 6016 bit x 2 / 8 = 4.81 TB/s, the H200 datasheet's 4.8 TB/s
    assert r.memory_bandwidth_bytes_s == pytest.approx(4.8143e12, rel=1e-4)


def test_replayed_load_reading_from_shared_sample_08() -> None:
    idle = Nvml(ReplayNvml(load_recording("08:idle"))).read(0)
    after = Nvml(ReplayNvml(load_recording("08:after"))).read(0)
    assert after.power_w is not None and idle.power_w is not None and after.power_w > 5 * idle.power_w
    assert after.throttle_reasons == ("SwPowerCap",)
    assert after.sm_clock_mhz is not None and after.sm_clock_mhz < (after.max_sm_clock_mhz or 0)
    assert (after.energy_j or 0) > (idle.energy_j or 0)
    assert after.uuid == "GPU-6b7c7fe4-8142-0545-2c8a-7f46d9b5fdea"


def test_throttle_decode() -> None:
    assert decode_throttle_reasons(None) == ()
    assert decode_throttle_reasons(0) == ()
    assert decode_throttle_reasons(0x4) == ("SwPowerCap",)
    assert decode_throttle_reasons(0x1 | 0x40 | 0x100) == (
        "GpuIdle",
        "HwThermalSlowdown",
        "DisplayClockSetting",
    )
    assert decode_throttle_reasons(0x4 | 0x1000) == ("SwPowerCap", "0x1000")


def test_recorded_sampler_run_on_h200_shows_load() -> None:
    """The JSON lines GpuSampler wrote on the real H200 (idle, bf16 matmul load, idle)."""
    recs = [json.loads(line) for line in (FIXTURES / "gpu_sampler.jsonl").read_text().splitlines()]
    readings = [r["readings"][0] for r in recs]
    power = [r["power_w"] for r in readings]
    energy = [r["energy_j"] for r in readings]
    assert min(power) < 100 and max(power) > 600  # idle ~81 W, load at the 700 W cap
    assert all(b >= a for a, b in itertools.pairwise(energy))  # a counter
    assert {"GpuIdle", "SwPowerCap"} <= {w for r in readings for w in r["throttle_reasons"]}
    loaded = [r for r in readings if "SwPowerCap" in r["throttle_reasons"]]
    capped = [r for r in loaded if r["sm_clock_mhz"] < r["max_sm_clock_mhz"]]
    assert len(capped) > 0.8 * len(loaded)  # at the power cap the SM clock drops below its max


def test_replay_sampler_is_thread_safe_and_joins() -> None:
    got: list[GpuSample] = []
    lock = threading.Lock()

    def sink(s: GpuSample) -> None:
        with lock:
            got.append(s)

    with GpuSampler(sink, interval_s=0.01, session=Nvml(ReplayNvml(load_recording("raw_load")))) as sampler:
        while len(got) < 5:
            threading.Event().wait(0.01)
    assert not sampler.running
    assert all(s.readings[0].throttle_reasons == ("SwPowerCap",) for s in got)
