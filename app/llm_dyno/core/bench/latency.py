"""The gaps between a stream's text-carrying chunks, summarised (what a run records as its latency)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_dyno.core.records import fields_dict


@dataclass(frozen=True)
class LatencySummary:
    """Summary of inter-chunk gaps (seconds) between successive text-carrying chunks."""

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
            len(gaps), sum(gaps) / len(gaps), _quantile(ordered, 0.50), _quantile(ordered, 0.99), ordered[-1]
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form (its fields)."""
        return fields_dict(self)


def _quantile(ordered: list[float], q: float) -> float:
    # linear interpolation between closest ranks (numpy's default)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
