"""What a server's log says about speculative decoding: its ``SpecDecoding metrics`` lines, summed.

Each line covers one logging interval (about 10 s) and prints that interval's mean acceptance length,
per-position acceptance rates and drafted tokens. Over a whole log they are weighted by the tokens
drafted in each interval, so a busy interval counts for more than one with a single short request.
Lines come through :func:`llm_dyno.core.runtime.logformats.parse_spec_decoding` (the one place that
knows the line formats).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from llm_dyno.core.runtime.logformats import parse_spec_decoding


@dataclass(frozen=True)
class LogAcceptance:
    """Acceptance over the log's SpecDecoding lines (``lines`` of them, ``drafted_tokens`` in all)."""

    mean_length: float | None
    per_position: tuple[float, ...]
    lines: int
    drafted_tokens: int

    @property
    def source(self) -> str:
        """Where the figures came from, for evidence and tooltips."""
        return f"log: {self.lines} SpecDecoding line{'s' if self.lines != 1 else ''}"


def log_acceptance(lines: Iterable[str]) -> LogAcceptance | None:
    """Drafted-token-weighted acceptance over every SpecDecoding line, or None when there is none.

    Per-position rates are averaged only over lines that print as many positions as the most common
    count (a changed ``num_speculative_tokens`` mid-log would otherwise mix positions).
    """
    lengths: list[tuple[float, float]] = []
    positions: list[tuple[tuple[float, ...], float]] = []
    drafted = 0
    n = 0
    for line in lines:
        if "SpecDecoding metrics" not in line and "Speculative metrics" not in line:
            continue
        parsed = parse_spec_decoding(line)
        if parsed is None:
            continue
        n += 1
        weight = float(parsed.drafted_tokens) if parsed.drafted_tokens else 1.0
        drafted += parsed.drafted_tokens or 0
        if parsed.mean_acceptance_length is not None:
            lengths.append((parsed.mean_acceptance_length, weight))
        if parsed.per_position:
            positions.append((parsed.per_position, weight))
    if not n:
        return None
    length = sum(v * w for v, w in lengths) / sum(w for _, w in lengths) if lengths else None
    per_position: tuple[float, ...] = ()
    if positions:
        widths = [len(p) for p, _ in positions]
        width = max(set(widths), key=widths.count)
        same = [(p, w) for p, w in positions if len(p) == width]
        total = sum(w for _, w in same)
        per_position = tuple(sum(p[i] * w for p, w in same) / total for i in range(width))
    return LogAcceptance(length, per_position, n, drafted)
