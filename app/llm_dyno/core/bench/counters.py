"""Per-run deltas of the server's counters, read through telemetry.metrics (the one metrics parser)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llm_dyno.core.bench.client import BenchClient
from llm_dyno.core.bench.run_readings import Acceptance
from llm_dyno.core.telemetry.metrics import MetricsSnapshot, scrape
from llm_dyno.core.telemetry.rates import counters_fell

CounterSource = Callable[[], MetricsSnapshot]


def metrics_source(client: BenchClient) -> CounterSource:
    """Scrape ``/metrics`` over the benchmark client's own connection pool (no extra client)."""
    return lambda: scrape(client.http, client.base_url)


@dataclass(frozen=True)
class CounterDelta:
    """What the server counted between two scrapes around one run.

    ``unknown`` says why the counts are None although the server exposes them (its counters fell:
    it restarted during the run; or its spec-decode counts contradict each other)."""

    generation_tokens: int | None
    acceptance: Acceptance | None
    read_bytes: int | None = None  # vLLM's estimate (--enable-mfu-metrics; 0 or None without it)
    unknown: str | None = None


def _int(before: float | None, after: float | None) -> int | None:
    return None if before is None or after is None else round(after - before)


def counter_delta(before: MetricsSnapshot, after: MetricsSnapshot) -> CounterDelta:
    """Counts between ``before`` and ``after``; acceptance only when the server does spec decoding.

    The live rates' reset rule holds here too (:func:`~llm_dyno.core.telemetry.rates.counters_fell`):
    a counter that fell means the server restarted in between, so no count of the run is known (None
    and ``unknown`` set, never a negative count or a ratio of two)."""
    if counters_fell(before, after):
        return CounterDelta(
            None, None, None, unknown="the server's counters fell during the run (it restarted?)"
        )
    acceptance = None
    drafts = _int(before.spec_drafts, after.spec_drafts)
    draft_tokens = _int(before.spec_draft_tokens, after.spec_draft_tokens)
    accepted = _int(before.spec_accepted_tokens, after.spec_accepted_tokens)
    if after.has_spec_decode and drafts is not None and draft_tokens is not None and accepted is not None:
        per_pos = tuple(
            round(v - before.spec_accepted_per_pos.get(i, 0.0))
            for i, v in sorted(after.spec_accepted_per_pos.items())
        )
        acceptance = Acceptance(
            drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted, per_position_accepted=per_pos
        )
        if (why := acceptance.contradiction) is not None:
            return CounterDelta(
                _int(before.generation_tokens, after.generation_tokens),
                None,
                _int(before.estimated_read_bytes, after.estimated_read_bytes),
                unknown=f"the server's spec-decode counters contradict each other ({why})",
            )
    return CounterDelta(
        _int(before.generation_tokens, after.generation_tokens),
        acceptance,
        _int(before.estimated_read_bytes, after.estimated_read_bytes),
    )
