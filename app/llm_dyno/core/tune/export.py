"""A tune's exports: JSON (the record and what it found), CSV (a row per trial) and the post row.

The post row is one Markdown line, like the benchmark's, to paste next to other people's tunes:
``Qwen-27B · tune power=230,290,350 · knee power=290 · 41.2 TPS (97 % of best) · 0.21 tok/J · 255 W ·
within noise · NVIDIA H200``.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from llm_dyno.core.textsafe import csv_cell
from llm_dyno.core.tune.analysis import TuneAnalysis
from llm_dyno.core.tune.record import TuneRecord

CSV_COLUMNS = (
    "trial", "wall_tps", "decode_tps", "tokens_per_j", "mean_power_w", "acceptance_rate",
    "mean_acceptance_length", "completion_tokens", "measured_runs", "temp_before_c", "knee", "pareto",
    "errors",
)  # fmt: skip


def _gpu_name(record: TuneRecord) -> str | None:
    """The GPU a tune ran on, from its first stored result (the one place that reads a result's
    context here)."""
    for run in record.runs:
        if run.result is not None and run.result.context.gpu:
            return run.result.context.gpu
    return None


def to_dict(record: TuneRecord, analysis: TuneAnalysis) -> dict[str, Any]:
    """JSON form: the record plus ``analysis`` (a row per trial, the knee and its rule, the front, the
    recommendation with its evidence and verdicts)."""
    rec = analysis.recommendation
    return {
        **record.to_dict(),
        "analysis": {
            "rule": analysis.rule,
            "tolerance": analysis.tolerance,
            "best_trial": analysis.best.trial.index if analysis.best else None,
            "knee_trial": analysis.knee.trial.index if analysis.knee else None,
            "pareto_trials": list(analysis.pareto),
            "noise": analysis.noise,
            "trials": [dict(zip(CSV_COLUMNS, row, strict=True)) for row in _rows(record, analysis)],
            "recommendation": None
            if rec is None
            else {
                "trial": rec.trial.index,
                "settings": {s.knob.label: s.value for s in rec.settings},
                "evidence": list(rec.evidence),
                "verdict": rec.verdict,
                "baseline_trial": rec.baseline.index if rec.baseline else None,
                "against_best": [{"prompt": p, **c.model_dump(mode="json")} for p, c in rec.against_best],
                "against_baseline": [
                    {"prompt": p, **c.model_dump(mode="json")} for p, c in rec.against_baseline
                ],
            },
        },
    }


def _rows(record: TuneRecord, analysis: TuneAnalysis) -> list[tuple[Any, ...]]:
    rows = []
    knee = analysis.knee.trial.index if analysis.knee else None
    for s in analysis.summaries:
        temps = s.temps_before_c
        rows.append(
            (
                s.trial.label,
                s.wall_tps,
                s.decode_tps,
                s.tokens_per_j,
                s.mean_power_w,
                s.acceptance_rate,
                s.mean_acceptance_length,
                s.completion_tokens,
                s.measured_runs,
                round(sum(temps) / len(temps), 1) if temps else None,
                s.trial.index == knee,
                s.trial.index in analysis.pareto,
                "; ".join(s.errors),
            )
        )
    return rows


def _cell(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def markdown_table(analysis: TuneAnalysis) -> list[str]:
    """The trials as a Markdown table (the CLI prints it, the window shows it), knee and front marked."""
    lines = [
        "| # | trial | wall TPS | decode TPS | tok/J | mean W | accept | tokens | °C before | |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    knee = analysis.knee.trial.index if analysis.knee else None
    for s in analysis.summaries:
        marks = [
            m
            for m, on in (("knee", s.trial.index == knee), ("pareto", s.trial.index in analysis.pareto))
            if on
        ]
        acc = f"{s.acceptance_rate * 100:.0f} %" if s.acceptance_rate is not None else "—"
        temps = s.temps_before_c
        temp = f"{sum(temps) / len(temps):.0f}" if temps else "—"
        lines.append(
            f"| {s.trial.index} | {s.trial.label} | {_cell(s.wall_tps)} | {_cell(s.decode_tps)} | "
            f"{_cell(s.tokens_per_j, 3)} | {_cell(s.mean_power_w, 0)} | {acc} | {s.completion_tokens} | "
            f"{temp} | {' '.join(marks)} |"
        )
    return lines


def to_csv(record: TuneRecord, analysis: TuneAnalysis) -> str:
    """One row per trial, knob values as their own columns first."""
    out = io.StringIO()
    writer = csv.writer(out)
    knobs = [v.knob.label for v in record.varies]
    # the header is the app's own words and knob labels checked when parsed ("--max-num-batched-tokens"
    # starts with "-" and is no formula): written as they are, so a spreadsheet's column is the knob
    writer.writerow([*knobs, *CSV_COLUMNS])
    for s, row in zip(analysis.summaries, _rows(record, analysis), strict=True):
        cells = [*(s.trial.value(k) for k in knobs), *("" if c is None else c for c in row)]
        writer.writerow([csv_cell(c) if isinstance(c, str) else c for c in cells])
    return out.getvalue()


def post_row(record: TuneRecord, analysis: TuneAnalysis) -> str:
    """The Markdown line to paste (see the module docstring)."""
    parts = [
        record.profile,
        "tune " + " × ".join(f"{v.knob.label}={','.join(v.values)}" for v in record.varies),
    ]
    knee, best, rec = analysis.knee, analysis.best, analysis.recommendation
    if knee is not None and best is not None and rec is not None:
        parts.append("knee " + knee.trial.label)
        pct = (knee.wall_tps or 0) / (best.wall_tps or 1) * 100
        parts.append(f"{knee.wall_tps:.1f} TPS ({pct:.0f} % of best)")
        if knee.tokens_per_j is not None:
            parts.append(f"{knee.tokens_per_j:.3g} tok/J")
        if knee.mean_power_w is not None:
            parts.append(f"{knee.mean_power_w:.0f} W")
        parts.append(rec.verdict)
    elif analysis.noise is not None and best is not None:
        parts.append(f"best {best.trial.label} {best.wall_tps:.1f} TPS · no difference within noise")
    else:
        parts.append("no trial measured")
    gpu = _gpu_name(record)
    if gpu:
        parts.append(gpu)
    return " · ".join(parts)
