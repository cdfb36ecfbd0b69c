"""Side-by-side comparison of stored results: per prompt and metric, a noise-aware verdict.

The first result is the baseline; each other one is judged against it with
:func:`llm_dyno.core.bench.stats.compare_samples` (Welch's t-test at 95 %, see there). When both carry a
profile snapshot the profile diff says what changed between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.stats import Comparison, compare_samples

# metric -> whether higher is better
METRICS: dict[str, bool] = {"wall_tps": True, "decode_tps": True, "ttft_s": False, "tokens_per_j": True}


@dataclass(frozen=True)
class ResultComparison:
    """One candidate against the baseline."""

    baseline_id: int | None
    candidate_id: int | None
    rows: tuple[tuple[str, Comparison], ...]  # (prompt name, comparison)
    profile_diff: list[dict[str, Any]] | None = None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "baseline": self.baseline_id,
            "candidate": self.candidate_id,
            "rows": [{"prompt": p, **c.model_dump(mode="json")} for p, c in self.rows],
            "profile_diff": self.profile_diff,
            "notes": list(self.notes),
        }


def compare_pair(
    baseline: BenchResult,
    candidate: BenchResult,
    *,
    baseline_id: int | None = None,
    candidate_id: int | None = None,
) -> ResultComparison:
    """Verdicts for every prompt both results ran and every metric both measured, over the counted runs
    (:attr:`PromptResult.counted`); what was left out of either side is named in the notes."""
    rows: list[tuple[str, Comparison]] = []
    for prompt in baseline.prompts:
        other = candidate.prompt(prompt.name)
        if other is None:
            continue
        for metric, higher in METRICS.items():
            a, b = prompt.values(metric), other.values(metric)
            if a and b:
                rows.append((prompt.name, compare_samples(metric, a, b, higher_is_better=higher)))
    notes: list[str] = []
    for side, result in (("baseline", baseline), ("candidate", candidate)):
        for prompt in result.prompts:
            note = prompt.exclusion_note()
            if note:
                notes.append(f"{side} {prompt.name}: {note}")
    if baseline.suite != candidate.suite:
        notes.append(f"different suites: {baseline.suite} vs {candidate.suite}")
    return ResultComparison(
        baseline_id, candidate_id, tuple(rows), _profile_diff(baseline, candidate), tuple(notes)
    )


def _profile_diff(a: BenchResult, b: BenchResult) -> list[dict[str, Any]] | None:
    pa, pb = a.context.profile, b.context.profile
    if not isinstance(pa, dict) or not isinstance(pb, dict):
        return None
    try:
        from llm_dyno.core.profiles.diff import diff_profiles
        from llm_dyno.core.profiles.model import profile_from_data

        diff = diff_profiles(profile_from_data(pa), profile_from_data(pb))
    except Exception as exc:  # an old snapshot that no longer validates must not break the comparison
        return [{"error": f"profile diff unavailable: {exc}"}]
    rows = diff.to_dict().get("rows")
    return list(rows) if isinstance(rows, list) else [diff.to_dict()]


def compare_many(results: list[tuple[int | None, BenchResult]]) -> list[ResultComparison]:
    """The first result against each of the others."""
    if len(results) < 2:
        return []
    (base_id, base), rest = results[0], results[1:]
    return [compare_pair(base, r, baseline_id=base_id, candidate_id=rid) for rid, r in rest]


def render_text(comparisons: list[ResultComparison]) -> str:
    """A plain-text table per candidate."""
    lines: list[str] = []
    for comp in comparisons:
        lines.append(f"#{comp.candidate_id} vs #{comp.baseline_id} (baseline)")
        lines.append(
            f"  {'prompt':<12} {'metric':<13} {'baseline':>10} {'candidate':>10} {'Δ %':>8}  verdict"
        )
        for prompt, c in comp.rows:
            delta = f"{c.delta_pct:+.1f}" if c.delta_pct is not None else "—"
            lines.append(
                f"  {prompt:<12} {c.metric:<13} {_fmt(c.baseline_mean):>10} {_fmt(c.candidate_mean):>10}"
                f" {delta:>8}  {c.verdict.value}"
            )
        for note in comp.notes:
            lines.append(f"  note: {note}")
        if comp.profile_diff:
            lines.append("  profile changes:")
            for row in comp.profile_diff:
                lines.append("    " + ", ".join(f"{k}={v}" for k, v in row.items()))
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
