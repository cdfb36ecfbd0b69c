"""The figures ``vllm bench serve`` reports, with its definitions, from one run's chunk arrival times.

``vllm bench serve`` (vllm/benchmarks/lib/endpoint_request_func.py and serve.py, vLLM 0.32) times every
stream event that carries a choice:

* **TTFT**: request sent → the first such event;
* **E2E latency**: request sent → the last such event (the trailing usage event carries no token);
* **ITL**: every gap between consecutive such events, pooled over all requests (with speculative
  decoding one event carries several tokens, so ITL is not TPOT);
* **TPOT**: (E2E − TTFT) / (output tokens − 1) per request, output tokens from ``usage``;
* **output throughput**: output tokens / benchmark duration; one request at a time, as here, that is
  Σ tokens / Σ E2E.

It prints mean, median and p99 of each (numpy's linear percentile). The community's wall and decode
TPS (tokens / wall, tokens / (wall − TTFT), wall ending at ``[DONE]``, TTFT at the first *text*) stay
the headline figures; these sit beside them so a result reads next to a ``vllm bench serve`` one.

A stream **arrived in a burst** when its timing measured transport instead of decoding: the tokens after
the first came within a quarter of the wall time (the server held them back, then sent them at once:
the issue's 800 tokens 0.54 s after a 3.26 s TTFT), or most events after the first arrived in the same
network read as the one before (gaps under 0.2 ms, far below any decode step). Its decode TPS is not
a decode speed, so it is kept out of decode figures.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from pydantic import ConfigDict, Field

from llm_dyno.core.records import Record

BURST_SHARE = 0.25
SAME_READ_S = 0.0002


class PeerTimings(Record):
    """One run's ``vllm bench serve`` figures (seconds) and its inter-event gaps (stored as a run's or a
    request's ``peer``: ``model_dump`` / ``model_validate``)."""

    ttft_s: float
    e2e_s: float
    tpot_s: float | None
    itl_s: tuple[float, ...] = ()

    @staticmethod
    def of(event_times_s: Sequence[float], output_tokens: int) -> PeerTimings | None:
        """From the arrival times (since the request was sent) of every event carrying a choice."""
        if not event_times_s:
            return None
        ttft, e2e = event_times_s[0], event_times_s[-1]
        tpot = (e2e - ttft) / (output_tokens - 1) if output_tokens > 1 else None
        # 0.1 µs is far finer than any clock here and keeps the stored gaps short
        gaps = tuple(round(b - a, 7) for a, b in itertools.pairwise(event_times_s))
        return PeerTimings(ttft_s=ttft, e2e_s=e2e, tpot_s=tpot, itl_s=gaps)


def burst_reason(
    ttft_s: float | None, wall_s: float, completion_tokens: int, peer: PeerTimings | None = None
) -> str | None:
    """Why the stream's timing measured transport rather than decoding (module docstring), or None."""
    if ttft_s is None or completion_tokens <= 1 or wall_s <= 0:
        return None
    if wall_s - ttft_s < BURST_SHARE * wall_s:
        return (
            f"{completion_tokens} tokens arrived within {(wall_s - ttft_s) * 1000:.0f} ms after a TTFT of "
            f"{ttft_s:.2f} s (under {BURST_SHARE:.0%} of the wall time)"
        )
    if peer is not None and len(peer.itl_s) >= 4:
        same_read = sum(1 for g in peer.itl_s if g < SAME_READ_S)
        if same_read > len(peer.itl_s) / 2:
            n = len(peer.itl_s)
            return f"{same_read} of {n} chunks after the first came in one network read with the one before"
    return None


def arrived_in_burst(
    ttft_s: float | None, wall_s: float, completion_tokens: int, peer: PeerTimings | None = None
) -> bool:
    """Whether the stream arrived in a burst (see :func:`burst_reason`)."""
    return burst_reason(ttft_s, wall_s, completion_tokens, peer) is not None


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's default (linear) percentile, ``q`` in 0..100, of a non-empty sequence."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class Spread(Record):
    """Mean, median and p99 of one figure, in milliseconds (as ``vllm bench serve`` prints them)."""

    n: int
    mean_ms: float
    median_ms: float
    p99_ms: float

    @staticmethod
    def of_seconds(values: Sequence[float]) -> Spread | None:
        """From values in seconds; None when there are none."""
        if not values:
            return None
        ms = [v * 1000 for v in values]
        return Spread(
            n=len(ms), mean_ms=sum(ms) / len(ms), median_ms=percentile(ms, 50), p99_ms=percentile(ms, 99)
        )


class PeerSummary(Record):
    """A prompt's ``vllm bench serve`` figures over its counted runs; its JSON (``model_dump``, the
    prompt summary's ``peer``) names the spreads ``ttft_ms`` … ``e2el_ms``."""

    model_config = ConfigDict(serialize_by_alias=True)

    requests: int
    ttft: Spread | None = Field(serialization_alias="ttft_ms")
    tpot: Spread | None = Field(serialization_alias="tpot_ms")
    itl: Spread | None = Field(serialization_alias="itl_ms")
    e2el: Spread | None = Field(serialization_alias="e2el_ms")
    output_throughput_tps: float | None

    @staticmethod
    def of(runs: Sequence[tuple[PeerTimings, int]]) -> PeerSummary | None:
        """From (timings, output tokens) of each run; None without any timed run."""
        if not runs:
            return None
        duration = sum(p.e2e_s for p, _ in runs)
        return PeerSummary(
            requests=len(runs),
            ttft=Spread.of_seconds([p.ttft_s for p, _ in runs]),
            tpot=Spread.of_seconds([p.tpot_s for p, _ in runs if p.tpot_s is not None]),
            itl=Spread.of_seconds([g for p, _ in runs for g in p.itl_s]),
            e2el=Spread.of_seconds([p.e2e_s for p, _ in runs]),
            output_throughput_tps=sum(n for _, n in runs) / duration if duration > 0 else None,
        )

    def describe(self) -> str:
        """One line: ``TTFT 12.1 / TPOT 2.90 / ITL 2.88 / E2E 751 ms (mean) · 340.2 tok/s output``."""

        def m(s: Spread | None, spec: str) -> str:
            return "—" if s is None else f"{s.mean_ms:{spec}}"

        out = (
            f"TTFT {m(self.ttft, '.1f')} / TPOT {m(self.tpot, '.2f')} / ITL {m(self.itl, '.2f')} / "
            f"E2E {m(self.e2el, '.0f')} ms (mean)"
        )
        if self.output_throughput_tps is not None:
            out += f" · {self.output_throughput_tps:.1f} tok/s output"
        return out
