"""Plain (Qt-free) formatting for the benchmark view: table cells of a run, verdict words and colours."""

from __future__ import annotations

from llm_dyno.core.bench.result import BenchResult, BenchRun
from llm_dyno.core.bench.stats import Comparison, Verdict

RUN_COLUMNS = (
    "Prompt",
    "Run",
    "Warm-up",
    "TTFT s",
    "Wall s",
    "Tokens",
    "Wall TPS",
    "Decode TPS",
    "TPOT ms",
    "Accept %",
    "Energy J",
    "Finish",
    "Warnings",
)

METRIC_LABELS = {
    "wall_tps": "wall TPS",
    "decode_tps": "decode TPS",
    "ttft_s": "TTFT s",
    "tokens_per_j": "tokens/J",
}


def num(value: float | None, digits: int = 1) -> str:
    """A number with ``digits`` decimals, or an em dash when unknown."""
    return "—" if value is None else f"{value:.{digits}f}"


def run_cells(run: BenchRun) -> list[str]:
    """The table cells of one run, in :data:`RUN_COLUMNS` order."""
    acc = run.acceptance.rate if run.acceptance is not None else None
    energy = run.energy.energy_j if run.energy is not None else None
    peer = run.peer
    return [
        run.prompt,
        str(run.index),
        "yes" if run.warmup else "left out" if run.left_out else "",
        num(run.ttft_s, 3) + (f" ({run.reasoning.describe()})" if run.reasoning else ""),
        num(run.wall_s, 2),
        str(run.completion_tokens),
        num(run.wall_tps),
        "burst" if run.burst else num(run.decode_tps),
        num(peer.tpot_s * 1000 if peer is not None and peer.tpot_s is not None else None, 2),
        num(acc * 100 if acc is not None else None, 0),
        num(energy),
        run.finish_reason or "—",
        "; ".join(run.warnings),
    ]


def warning_lines(result: BenchResult) -> list[str]:
    """Each distinct warning of the measured runs once, with the runs it came from (the table's cell
    ends in "…" where the text is longer than its column)."""
    runs_of: dict[str, list[str]] = {}
    for run in result.all_runs():
        if not run.warmup:
            for warning in run.warnings:
                runs_of.setdefault(warning, []).append(f"{run.prompt} run {run.index}")
    return [f"Warning ({', '.join(runs)}): {warning}" for warning, runs in runs_of.items()]


def verdict_word(comparison: Comparison) -> str:
    """``faster`` / ``slower`` / ``within noise`` (``more`` / ``less efficient`` for tokens per joule)."""
    v = comparison.verdict
    if v is Verdict.WITHIN_NOISE:
        return "within noise"
    if v is Verdict.UNKNOWN:
        return "unknown"
    if comparison.metric == "tokens_per_j":
        return "more efficient" if v is Verdict.BETTER else "less efficient"
    return "faster" if v is Verdict.BETTER else "slower"


def verdict_tone(verdict: Verdict) -> str:
    """The theme colour name of a verdict: ``green``, ``red`` or ``grey``."""
    return {Verdict.BETTER: "green", Verdict.WORSE: "red"}.get(verdict, "grey")


def delta_text(delta_pct: float | None) -> str:
    """``+3.2 %`` or an em dash."""
    return "—" if delta_pct is None else f"{delta_pct:+.1f} %"
