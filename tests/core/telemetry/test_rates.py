"""Live rates from a recorded real counter sequence: a window spanning the counters' steps, never one step
divided by a short gap (issue 14: 24,638 tok/s shown for a server doing ~1,100)."""

from __future__ import annotations

import itertools
import math

import pytest

from llm_dyno.core.telemetry.metrics import MetricsSnapshot, parse_metrics
from llm_dyno.core.telemetry.rates import RateWindow, compute_rates, step_rate
from tests.support.metrics_replay import Frame, counter, frame_at, frames, true_rate

RECORDED = frames()
TRUE = true_rate(RECORDED)  # ~1,130 tok/s over the 19 s recorded


def sampled(
    gaps: tuple[float, ...], step_s: float | None = None, until: float | None = None
) -> list[MetricsSnapshot]:
    """Scrapes of the recording at the given repeating gaps; with ``step_s`` its counters step that often."""
    end = RECORDED[-1].t if until is None else until
    out, t, i = [], 0.0, 0
    while t < end:
        at = t if step_s is None else math.floor(t / step_s) * step_s
        out.append(parse_metrics(frame_at(RECORDED, at).text, taken_at=t))
        t += gaps[i % len(gaps)]
        i += 1
    return out


def test_recording_is_what_the_tests_assume() -> None:
    # the real server's counter moves in lumps (a request's 400 tokens at once) at ~1,130 tok/s
    steps = {counter(b.text) - counter(a.text) for a, b in itertools.pairwise(RECORDED)}
    assert 400.0 in steps and 1000 < TRUE < 1300


@pytest.mark.parametrize(
    ("gaps", "step_s"),
    [
        ((0.016, 0.25), None),
        ((0.25,), None),
        ((0.1,), None),
        ((0.25,), 1.0),
        ((0.016, 0.25), 1.0),
        ((1.0,), 1.0),
    ],
)
def test_window_never_reports_a_step_over_a_short_gap(gaps: tuple[float, ...], step_s: float | None) -> None:
    snaps = sampled(gaps, step_s)
    naive = [compute_rates(a, b).generation_tps or 0.0 for a, b in itertools.pairwise(snaps)]
    assert max(naive) > 1.7 * TRUE  # the defect: two samples straddling one step
    window = RateWindow.for_interval(max(gaps))
    rates = [r for s in snaps if (r := window.add(s)) is not None]
    assert len(rates) > len(snaps) * 0.6  # after the first seconds every sample has rates
    gen = [r.generation_tps for r in rates]
    assert all(g is not None and 0.7 * TRUE < g < 1.4 * TRUE for g in gen), (min(gen), max(gen))
    # ratios over the window are the recorded counts' ratios (draft model, greedy: ~98.7 % accepted)
    assert all(r.acceptance_rate is not None and 0.95 < r.acceptance_rate <= 1.0 for r in rates)


def test_no_rates_until_the_window_spans_its_minimum() -> None:
    window = RateWindow(span_s=5.0, min_span_s=2.0)
    snaps = sampled((0.25,), 1.0, until=3.0)
    results = [window.add(s) for s in snaps]
    assert all(r is None for s, r in zip(snaps, results, strict=True) if s.taken_at < 2.0)
    assert all(r is not None for s, r in zip(snaps, results, strict=True) if s.taken_at >= 2.0)


def test_a_server_that_stops_decays_to_zero_within_a_window() -> None:
    window = RateWindow(span_s=5.0, min_span_s=2.0)
    last = None
    for s in sampled((0.25,), 1.0):
        last = window.add(s)
    assert last is not None and (last.generation_tps or 0) > 0.5 * TRUE
    end = RECORDED[-1]
    tail = [window.add(parse_metrics(end.text, taken_at=end.t + k * 0.25)) for k in range(1, 30)]
    gen = [r.generation_tps for r in tail if r is not None]
    assert gen == sorted(gen, reverse=True)  # falls steadily, never jumps back up
    assert gen[-1] == 0.0  # no change in the last 5 s: nothing generated


def test_restart_resets_the_window_and_never_goes_negative() -> None:
    window = RateWindow(span_s=5.0, min_span_s=2.0)
    for s in sampled((0.5,), until=4.0):
        window.add(s)
    zero = Frame(0.0, RECORDED[0].text.replace("4800.0", "0.0"))
    restarted = window.add(parse_metrics(zero.text, taken_at=5.0))
    assert restarted is not None and restarted.reset and restarted.generation_tps is None
    assert window.add(parse_metrics(zero.text, taken_at=5.5)) is None  # the window starts again


def test_step_rate_on_continuous_counters_is_the_plain_rate() -> None:
    points = [(t * 0.1, 100.0 * t * 0.1) for t in range(51)]  # 100/s, changing on every sample
    assert step_rate(points, 5.0) == pytest.approx(100.0)
    assert step_rate([(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)], 2.0) == 0.0
