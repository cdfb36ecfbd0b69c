"""The gaps between a stream's text-carrying chunks, summarised (what a run records as its latency)."""

from __future__ import annotations

from llm_dyno.core.records import Record


class LatencySummary(Record):
    """Summary of inter-chunk gaps (seconds) between successive text-carrying chunks (stored as a run's
    ``inter_chunk``: ``model_dump`` / ``model_validate``)."""

    count: int
    mean_s: float
    p50_s: float
    p99_s: float
    max_s: float

    @staticmethod
    def of(gaps: list[float]) -> LatencySummary | None:
        """Summarise gaps; ``None`` for fewer than one gap."""
        if not gaps:
            return None
        ordered = sorted(gaps)
        return LatencySummary(
            count=len(gaps),
            mean_s=sum(gaps) / len(gaps),
            p50_s=_quantile(ordered, 0.50),
            p99_s=_quantile(ordered, 0.99),
            max_s=ordered[-1],
        )


def _quantile(ordered: list[float], q: float) -> float:
    # linear interpolation between closest ranks (numpy's default)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
