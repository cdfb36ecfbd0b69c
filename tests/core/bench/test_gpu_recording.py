"""The benchmark recorded through ``llm-dyno bench`` on a real H200 (tests/fixtures/nvml/bench_on_gpu):
the energy stored per run agrees with NVML's counter read independently around each run, and the
stored result reads back through the history like any other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.store import HistoryStore

RECORDING = Path(__file__).resolve().parents[2] / "fixtures" / "nvml" / "bench_on_gpu" / "bench_on_gpu.json"


def test_stored_energy_agrees_with_the_independent_counter() -> None:
    data = json.loads(RECORDING.read_text())
    assert data["nvidia_smi_limit_before"] == data["nvidia_smi_limit_after"]  # nothing was changed
    assert len(data["runs"]) == 6
    for run in data["runs"]:
        assert run["app_over_independent"] == pytest.approx(1.0, abs=0.005)
        assert run["tokens_per_j"] == pytest.approx(run["completion_tokens"] / run["app_energy_j"])
        assert run["app_mean_power_w"] == pytest.approx(run["independent_mean_power_w"], rel=0.01)


def test_the_recorded_result_round_trips_through_the_history(tmp_path: Path) -> None:
    stored = json.loads(RECORDING.read_text())["stored_result"]
    result = BenchResult.from_dict(stored)
    assert result.context.gpu == "NVIDIA H200" and result.context.profile_name == "gpu-bench"
    with HistoryStore(tmp_path / "h.db") as history:
        rid = history.add(result)
        back = history.get(rid).result
    energies = [r.energy.energy_j for r in back.all_runs() if r.energy is not None]
    assert len(energies) == 6 and all(e > 6000 for e in energies)
