"""Headline figures leave out runs the app itself flags, and decode TPS of streams that came in a burst
(issue 14); the ``vllm bench serve`` figures beside them follow its definitions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.core.bench.peer import PeerSummary, PeerTimings, burst_reason, percentile
from llm_dyno.core.bench.report import markdown_line
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.compare import compare_pair, render_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "bench"


def stopped_warning() -> str:
    """The runner's own warning for a run that ended at 97 of 256 tokens."""
    from llm_dyno.core.bench.client import StreamOutcome
    from llm_dyno.core.bench.runner import _warnings
    from llm_dyno.core.bench.suite import SuitePrompt

    o = StreamOutcome(0.01, 0.3, 97, 20, "stop", 90, None, 300, 0, True)
    (warning,) = _warnings(o, SuitePrompt(name="code", max_tokens=256), None)
    return warning


def recorded() -> BenchResult:
    return BenchResult.from_dict(json.loads((FIXTURES / "cpu-tiny.json").read_text()))


def with_short_run(result: BenchResult, prompt: str, index: int) -> BenchResult:
    """The recorded result with one measured run as the runner records one that stopped at 97 tokens."""
    data = result.to_dict()
    for p in data["prompts"]:
        for r in p["runs"]:
            if p["name"] == prompt and r["index"] == index:
                r.update(
                    completion_tokens=97,
                    wall_tps=97 / r["wall_s"] * 2,
                    finish_reason="stop",
                    warnings=[stopped_warning()],
                )
    return BenchResult.from_dict(data)


def test_stopped_early_runs_are_kept_out_of_headlines_but_shown() -> None:
    base = recorded()
    short = with_short_run(base, "code", 2)
    code = short.prompt("code")
    assert code is not None
    assert len(code.measured) == 4 and len(code.counted) == 3 and [r.index for r in code.excluded] == [2]
    kept = [r.wall_tps for r in code.measured if r.index != 2]
    summary = code.summary("wall_tps")
    assert summary is not None and summary.n == 3 and summary.mean == pytest.approx(sum(kept) / 3)
    assert code.exclusion_note() == "1 of 4 runs left out (stopped early)"
    data = code.to_dict()
    assert data["summary"]["excluded_runs"] == [2] and data["summary"]["counted_runs"] == 3
    assert len(data["runs"]) == 5  # the run itself stays in the result, with its warning
    # the pasted line and the comparison use the same counted runs
    assert f"code {summary.mean:.1f}" in markdown_line(short)
    comparison = compare_pair(base, short)
    row = next(c for p, c in comparison.rows if p == "code" and c.metric == "wall_tps")
    assert row.candidate_mean == pytest.approx(summary.mean)
    assert any("left out" in n for n in comparison.notes)
    assert "left out (stopped early)" in render_text([comparison])


def test_issue_burst_is_flagged_and_kept_out_of_decode_figures() -> None:
    """The issue's code run: TTFT 3.26 s, 800 tokens, decode TPS 1,483 (0.54 s after the first token),
    shown with no warning. Stored that way (no chunk timings), it is judged again when read."""
    data = recorded().to_dict()
    run = data["prompts"][1]["runs"][1]
    run.update(ttft_s=3.26, wall_s=3.26 + 800 / 1483, completion_tokens=800, decode_tps=1483.0, peer=None)
    result = BenchResult.from_dict(data)
    code = result.prompt("code")
    assert code is not None
    flagged = code.runs[1]
    assert flagged.burst and not flagged.stopped_early
    assert 1483.0 not in code.values("decode_tps") and len(code.values("decode_tps")) == 3
    assert flagged.wall_tps in code.values("wall_tps")  # the wall time is real
    assert "decode TPS of 1 run left out (stream arrived in a burst)" in (code.exclusion_note() or "")
    reason = burst_reason(3.26, 3.26 + 800 / 1483, 800)
    assert reason is not None and "800 tokens arrived within 539 ms after a TTFT of 3.26 s" in reason


def test_recorded_streams_are_not_bursts() -> None:
    for p in recorded().prompts:
        assert not any(r.burst for r in p.runs)


def test_chunks_in_one_read_are_a_burst() -> None:
    steady = PeerTimings.of([0.01 + 0.003 * i for i in range(100)], 100)
    assert steady is not None and burst_reason(0.01, 0.31, 100, steady) is None
    lumped = PeerTimings.of([0.01, *[0.2 + 0.00001 * i for i in range(99)]], 100)
    assert lumped is not None
    reason = burst_reason(0.01, 0.4, 100, lumped)
    assert reason is not None and "98 of 99 chunks" in reason


def test_peer_definitions() -> None:
    # events at 0.1 s (first), then 0.2, 0.25, 0.5: 10 output tokens
    t = PeerTimings.of([0.1, 0.2, 0.25, 0.5], 10)
    assert t is not None
    assert (t.ttft_s, t.e2e_s) == (0.1, 0.5)
    assert t.tpot_s == pytest.approx(0.4 / 9)  # (E2E - TTFT) / (tokens - 1)
    assert t.itl_s == pytest.approx((0.1, 0.05, 0.25))
    back = PeerTimings.model_validate(json.loads(json.dumps(t.model_dump(mode="json"))))
    assert back.itl_s == pytest.approx(t.itl_s, abs=1e-7) and back.tpot_s == t.tpot_s
    u = PeerTimings.of([0.2, 0.3], 3)
    assert u is not None
    s = PeerSummary.of([(t, 10), (u, 3)])
    assert s is not None and s.requests == 2
    assert s.output_throughput_tps == pytest.approx(13 / 0.8)  # Σ tokens / Σ E2E, one at a time
    assert s.itl is not None and s.itl.n == 4  # pooled over both requests
    assert s.itl.median_ms == pytest.approx(100.0)
    assert s.e2el is not None and s.e2el.mean_ms == pytest.approx(400.0)
    assert percentile([1, 2, 3, 4], 99) == pytest.approx(3.97)  # numpy's linear percentile


def test_recorded_result_without_timings_has_no_peer_figures() -> None:
    # results stored before chunk timings were recorded read as before
    code = recorded().prompt("code")
    assert code is not None and code.peer() is None and code.to_dict()["summary"]["peer"] is None
