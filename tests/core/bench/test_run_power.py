"""A benchmark run's GPU power at the NVML boundary: the recorded H200 replayed by tests/support/nvml_shim.

``tests/fixtures/nvml/power_on_gpu`` was recorded on a lent H200 (read-only) with the instantaneous power
field; ``tests/fixtures/nvml/gpu_sampler.jsonl`` on the same GPU before the app read that field (a driver
without it, as far as the replay goes).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import time
from pathlib import Path
from types import ModuleType

import pytest

from llm_dyno.core.bench.gpu import MEAN_FROM_ENERGY, PEAK_AVERAGED, PEAK_INSTANT, RunSampler
from llm_dyno.core.telemetry.nvml import GpuReading, Nvml

REPO = Path(__file__).resolve().parents[3]
SHIM = REPO / "tests" / "support" / "nvml_shim" / "pynvml.py"
NVML = REPO / "tests" / "fixtures" / "nvml"


def _shim(monkeypatch: pytest.MonkeyPatch, recording: Path, name: str) -> ModuleType:
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(recording))
    spec = importlib.util.spec_from_file_location(name, SHIM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(session: Nvml, seconds: float) -> tuple[RunSampler, list[GpuReading]]:
    seen: list[GpuReading] = []

    def read() -> GpuReading:
        reading = session.read(0)
        seen.append(reading)
        return reading

    sampler = RunSampler(read, interval_s=0.1)
    sampler.start()
    time.sleep(seconds)
    sampler.stats = sampler.stop(completion_tokens=100)  # type: ignore[attr-defined]
    return sampler, seen


def test_mean_from_the_energy_counter_and_the_instantaneous_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = _shim(monkeypatch, NVML / "power_on_gpu" / "gpu_sampler_instant.jsonl", "replayed_pynvml_instant")
    sampler, seen = _run(Nvml(lib), 2.5)
    stats = sampler.stats  # type: ignore[attr-defined]
    first, last = seen[0], seen[-1]
    assert first.energy_j is not None and last.energy_j is not None
    # energy / time over the run, not the mean of the driver's lagging 1 s averages
    assert stats.energy_j == pytest.approx(last.energy_j - first.energy_j)
    assert stats.mean_power_source == MEAN_FROM_ENERGY
    assert stats.mean_power_w == pytest.approx(stats.energy_j / stats.span_s)
    averages = [r.power_w for r in seen if r.power_w is not None]
    assert stats.sampled_mean_power_w == pytest.approx(sum(averages) / len(averages))
    # the instantaneous field, where the driver has it (the recorded H200 does)
    assert stats.peak_power_source == PEAK_INSTANT
    assert stats.peak_power_w == max(r.power_instant_w for r in seen if r.power_instant_w is not None)
    assert stats.peak_power_w != max(averages)  # the replay moves through a load step: they differ


def test_without_the_field_the_peak_says_it_is_of_1_s_averages(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = _shim(monkeypatch, NVML / "gpu_sampler.jsonl", "replayed_pynvml_no_field")
    sampler, seen = _run(Nvml(lib), 1.0)
    stats = sampler.stats  # type: ignore[attr-defined]
    assert all(r.power_instant_w is None for r in seen)
    assert stats.peak_power_source == PEAK_AVERAGED
    assert stats.peak_power_w == max(r.power_w for r in seen if r.power_w is not None)


def test_ten_hertz_stays_ten_hertz_when_reads_take_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML reads took ~6 ms (up to 17) on the H200: sleeping a full interval after each read ran the
    10 Hz sampler at 9.2-9.4 Hz. On the deadline grid the rate holds."""
    lib = _shim(monkeypatch, NVML / "power_on_gpu" / "gpu_sampler_instant.jsonl", "replayed_pynvml_slow")
    session = Nvml(lib)

    def slow_read() -> GpuReading:
        time.sleep(0.015)  # the slowest reads seen on the H200
        return session.read(0)

    sampler = RunSampler(slow_read, interval_s=0.1)
    sampler.start()
    time.sleep(3.0)
    sampler.stop(completion_tokens=1)
    times = sampler.read_times[:-1]  # the last reading is stop()'s own
    rate = (len(times) - 1) / (times[-1] - times[0])
    assert rate == pytest.approx(10.0, rel=0.03), rate
    assert len(times) >= 29  # sleeping after each 15 ms read would give ~26 in 3 s


def test_the_h200_recording_agrees_with_the_independent_sampler() -> None:
    """What the lent H200 showed (tests/fixtures/nvml/power_on_gpu/README.md): the app's mean power within
    2 % of an independent sampler's counter over the same window on every run, its sampling at 10 Hz."""
    runs = json.loads((NVML / "power_on_gpu" / "summary.json").read_text())["runs"]
    assert len(runs) == 5
    for run in runs:
        assert run["mean_ratio"] == pytest.approx(1.0, abs=0.02), run["name"]
        assert run["rate_hz"] == pytest.approx(10.0, rel=0.02), run["name"]
        assert run["app"]["peak_power_source"] == PEAK_INSTANT
    # the driver's 1 s averages lag the load: their mean is off by more than 10 % on load steps
    assert max(abs(r["sampled_mean_ratio"] - 1) for r in runs) > 0.10


def test_the_power_figures_and_their_sources_are_stored_with_the_run() -> None:
    from llm_dyno.core.bench.result import BenchRun
    from llm_dyno.core.bench.run_readings import EnergyStats

    energy = EnergyStats(
        energy_j=1400.0, tokens_per_j=0.7, mean_power_w=553.1, peak_power_w=749.3, max_temperature_c=61.0,
        throttle_reasons=("SwPowerCap",), samples=51, sampled_mean_power_w=497.3,
        mean_power_source=MEAN_FROM_ENERGY, peak_power_source=PEAK_INSTANT, span_s=5.06,
    )  # fmt: skip
    run = BenchRun("narrative", 1, False, 0.1, 5.0, 1000, 200.0, 204.0, "length", energy=energy)
    back = BenchRun.from_dict("narrative", run.to_dict())
    assert back.energy == energy


def _idle_to_load_at_driver_resolution(tmp_path: Path) -> tuple[Path, float, float]:
    """The idle-to-load run's window of the independent sampler (raw NVML on the H200, ~200 readings a
    second), as a recording for the shim at 10 ms steps; with the window's instantaneous peak and the
    shortest time that peak was on show (the field changes every ~100 ms)."""
    base = json.loads((NVML / "power_on_gpu" / "gpu_sampler_instant.jsonl").read_text().splitlines()[0])
    device = {k: base["readings"][0][k] for k in ("index", "name", "uuid", "driver")}
    run = json.loads((NVML / "power_on_gpu" / "summary.json").read_text())["runs"][0]
    assert run["name"] == "idle then load step"
    with gzip.open(NVML / "power_on_gpu" / "independent.jsonl.gz", "rt") as f:
        raw = [json.loads(line) for line in f]
    window = [s for s in raw if run["first"] <= s["t"] <= run["last"]]
    out, t, i = [], window[0]["t"], 0
    while t <= window[-1]["t"]:
        while i + 1 < len(window) and window[i + 1]["t"] <= t:
            i += 1
        s = window[i]
        reading = {**device, "power_w": s["power_mw"] / 1000, "energy_j": s["energy_mj"] / 1000,
                   "power_instant_w": s["instant_mw"] / 1000}  # fmt: skip
        out.append(json.dumps({"taken_at": t, "error": None, "readings": [reading]}))
        t += 0.01
    path = tmp_path / "idle_to_load_10ms.jsonl"
    path.write_text("\n".join(out) + "\n")
    peak = max(s["instant_mw"] for s in window) / 1000
    on_show = [s["t"] for s in window if s["instant_mw"] / 1000 == peak]
    return path, peak, max(on_show) - min(on_show)


def test_the_peak_catches_a_100_ms_spike_that_10_hz_readings_can_miss(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On the lent H200 the 10 Hz readings missed one ~100 ms value of the instantaneous field on the
    idle-to-load step (749 vs 787 W). The benchmark's reader polls that one field at 40 Hz beside them:
    replayed at the driver's resolution, the peak is the independent sampler's."""
    from llm_dyno.core.telemetry.gpu_reader import LocalGpuReader

    recording, true_peak, on_show_s = _idle_to_load_at_driver_resolution(tmp_path)
    assert true_peak == pytest.approx(787.01) and on_show_s < 0.1  # the spike 10 Hz can miss
    monkeypatch.setenv("LLM_DYNO_TEST_NVML_PERIOD_S", "0.01")
    monkeypatch.setenv("LLM_DYNO_TEST_NVML_FROM_START", "1")
    lib = _shim(monkeypatch, recording, "replayed_pynvml_driver_resolution")
    reader = LocalGpuReader((0,), session=Nvml(lib))  # what a benchmark of a local server reads
    sampler = RunSampler(reader, interval_s=0.1)
    sampler.start()
    time.sleep(5.0)  # the recorded window is 5.1 s
    stats = sampler.stop(completion_tokens=1)
    assert stats.peak_power_source == PEAK_INSTANT
    assert stats.peak_power_w == pytest.approx(true_peak, rel=0.02)
    fast = sampler.instant_times
    rate = (len(fast) - 1) / (fast[-1] - fast[0])
    assert rate >= 20.0 and rate == pytest.approx(40.0, rel=0.1), rate  # on its own deadline grid
    full = sampler.read_times[:-1]
    assert (len(full) - 1) / (full[-1] - full[0]) == pytest.approx(10.0, rel=0.05)  # unchanged beside it


def test_a_reader_without_the_field_polls_nothing_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_dyno.core.telemetry.gpu_reader import LocalGpuReader

    lib = _shim(monkeypatch, NVML / "gpu_sampler.jsonl", "replayed_pynvml_no_field_fast")
    sampler = RunSampler(LocalGpuReader((0,), session=Nvml(lib)), interval_s=0.1)
    sampler.start()
    time.sleep(0.6)
    stats = sampler.stop(completion_tokens=1)
    assert sampler.instant_times == [] and stats.peak_power_source == PEAK_AVERAGED


def _counter_sides(raw: list[dict[str, float]], t: float) -> set[float]:
    """The independent counter's values (J) read just before and just after ``t``."""
    before = max((s for s in raw if s["t"] <= t), key=lambda s: s["t"])
    after = min((s for s in raw if s["t"] >= t), key=lambda s: s["t"])
    return {before["energy_mj"] / 1000, after["energy_mj"] / 1000}


def test_the_h200_with_the_40_hz_poll_agrees_with_the_independent_sampler() -> None:
    """tests/fixtures/nvml/power_fast_peak (a lent H200, read-only, two recordings of 5 runs each): the
    peak is the independent sampler's instantaneous peak, the idle-to-load runs included, and energy and
    mean power agree within 2 % (exactly, against the independent counter's own values at the window's
    edges)."""
    for rec in ("rec1", "rec2"):
        folder = NVML / "power_fast_peak" / rec
        runs = json.loads((folder / "summary.json").read_text())["runs"]
        with gzip.open(folder / "independent.jsonl.gz", "rt") as f:
            raw = [json.loads(line) for line in f]
        assert runs[0]["name"] == "idle then load step" and len(runs) == 5
        for run in runs:
            app, ind, where = run["app"], run["independent"], (rec, run["name"])
            assert app["peak_power_source"] == PEAK_INSTANT
            assert app["peak_power_w"] == pytest.approx(ind["instant_peak_w"], rel=0.02), where
            assert app["mean_power_w"] == pytest.approx(ind["mean_power_w"], rel=0.02), where
            assert app["energy_j"] == pytest.approx(ind["energy_j"], rel=0.02), where
            assert run["instant_rate_hz"] == pytest.approx(40.0, rel=0.02), where
            assert run["rate_hz"] == pytest.approx(10.0, rel=0.02), where
            first, last = _counter_sides(raw, run["first"]), _counter_sides(raw, run["last"])
            ends = {b - a for a in first for b in last}
            assert min(abs(app["energy_j"] - e) for e in ends) < 0.01, where
