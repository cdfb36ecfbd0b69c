"""Power-cap sweep results (knee rule, table) and the A/B. The sweep itself runs on the tune engine:
restoring on cancel and on errors is tested there, at the NVML boundary (tests/tune/test_tune_restore.py)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import pytest

from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.run_readings import EnergyStats
from llm_dyno.core.bench.stats import Verdict
from llm_dyno.core.bench.sweep import (
    SweepPoint,
    SweepResult,
    spec_ab,
    sweep_table,
    without_spec_decode,
)
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.profiles.model import Profile


@contextlib.contextmanager
def fixed_endpoint(url: str, model: str) -> Iterator[Endpoint]:
    """A server factory's body for a server that is already there (what spec_ab is handed)."""
    yield Endpoint(url, model)


def fake_result(tps: dict[str, list[float]], power: float | None = None) -> BenchResult:
    prompts = []
    for name, values in tps.items():
        runs = [
            BenchRun(
                name,
                i,
                False,
                0.1,
                100 / v,
                100,
                v,
                v,
                "length",
                energy=EnergyStats(
                    energy_j=100.0,
                    tokens_per_j=1.0,
                    mean_power_w=power,
                    peak_power_w=power,
                    max_temperature_c=65.0,
                )
                if power
                else None,
            )
            for i, v in enumerate(values)
        ]
        prompts.append(PromptResult(name, runs))
    return BenchResult("quick", RunContext(), prompts)


CURVE = {230: 40.0, 260: 45.0, 290: 48.0, 330: 50.0, 380: 51.0}


def test_sweep_knee_and_table() -> None:
    sweep = SweepResult(
        tuple(
            SweepPoint(cap, fake_result({"narrative": [tps] * 2, "code": [tps + 10] * 2}, cap * 0.9))
            for cap, tps in CURVE.items()
        )
    )
    # best mean = (51 + 61) / 2 = 56; within 5 %: >= 53.2 -> 290 W gives 53, 330 W gives 55 -> 330
    assert sweep.recommended_cap() == 330
    with pytest.raises(dataclasses.FrozenInstanceError):  # a result: the sweep job builds it whole
        sweep.cancelled = True  # type: ignore[misc]
    table = sweep_table(sweep)
    assert table.splitlines()[0] == (
        "| Cap (W) | Narr wall TPS | Code wall TPS | Actual power (W) | GPU temp (°C) | TPS/W (narr) |"
    )
    assert "| 330 | 50.0 | 60.0 | 297 | 65 | 0.168 |" in table


def test_spec_ab_verdicts() -> None:
    order: list[str] = []

    def run(endpoint: object) -> BenchResult:
        order.append(str(endpoint))
        if len(order) == 1:
            return fake_result({"narrative": [32.0, 33.0, 32.5], "code": [50.0, 40.0, 60.0]})
        return fake_result({"narrative": [55.0, 54.0, 55.5], "code": [52.0, 41.0, 58.0]})

    ab = spec_ab(lambda: fixed_endpoint("http://b", "m"), lambda: fixed_endpoint("http://a", "m"), run)
    assert "http://a" in order[0]  # the baseline (without) runs first
    verdicts = dict(ab.verdicts)
    assert (
        verdicts["narrative"].verdict == Verdict.BETTER and verdicts["code"].verdict == Verdict.WITHIN_NOISE
    )
    assert ab.summary()[0].startswith("narrative: net gain")


def test_spec_ab_takes_turns_and_merges_the_rounds() -> None:
    order: list[str] = []

    def run(endpoint: Endpoint) -> BenchResult:
        order.append(endpoint.url)
        speed = 55.0 if endpoint.url == "http://with" else 32.0
        return fake_result({"narrative": [speed, speed + 1]})

    ab = spec_ab(
        lambda: fixed_endpoint("http://with", "m"),
        lambda: fixed_endpoint("http://without", "m"),
        run,
        rounds=3,
    )
    assert order == ["http://without", "http://with"] * 3  # A B A B A B
    for side in (ab.without_spec, ab.with_spec):
        runs = side.prompts[0].runs
        assert len(runs) == 6 and [r.index for r in runs] == [1, 2, 3, 4, 5, 6]
        assert side.context.rounds == 3
    ((name, verdict),) = ab.verdicts
    assert name == "narrative" and verdict.verdict == Verdict.BETTER


def test_without_spec_decode_strips_flag() -> None:
    p = Profile(
        name="p",
        model="m",
        runtime="process",
        args=("--speculative-config", '{"method":"ngram"}', "--max-model-len", "2048"),
    )
    assert without_spec_decode(p).args == ("--max-model-len", "2048")
