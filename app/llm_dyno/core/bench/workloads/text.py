"""A workload report as plain text lines: the CLI's table after a run and in ``history show``."""

from __future__ import annotations

from llm_dyno.core.bench.workloads.records import WorkloadReport, WorkloadStep

_HEAD = f"{'step':<10} {'context':>8} {'cached':>8} {'TTFT':>8} {'decode':>10} {'pass':>9} {'accept':>7}"


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{unit}"


def step_line(s: WorkloadStep) -> str:
    """One step as a table row (reasoning timings after it when the server split them)."""
    accept = None if s.acceptance_rate is None else s.acceptance_rate * 100
    row = (
        f"{s.label:<10} {_num(s.context_tokens, ',d'):>8} {_num(s.cached_tokens, ',d'):>8} "
        f"{_num(s.ttft_s, '.3f', 's'):>8} {_num(s.decode_tps, '.1f', ' TPS'):>10} "
        f"{_num(None if s.pass_s is None else s.pass_s * 1000, '.1f', ' ms'):>9} "
        f"{_num(accept, '.0f', '%'):>7}"
    )
    if s.first_reasoning_s is not None or s.reasoning_tokens:
        row += (
            f"  reasoning first {_num(s.first_reasoning_s, '.3f', 's')}, "
            f"content first {_num(s.first_content_s, '.3f', 's')}, "
            f"{_num(s.reasoning_tokens, 'd')} reasoning / {_num(s.content_tokens, 'd')} content tokens"
        )
    return row


def workload_lines(report: WorkloadReport) -> list[str]:
    """The report's table, its summary figures and its notes."""
    limit = (
        f"max-model-len {report.max_model_len:,} ({report.max_model_len_from})"
        if report.max_model_len
        else ("max-model-len not known (the server does not list it)")
    )
    out = [f"{report.kind}: {len(report.steps)} steps; {limit}", _HEAD, *map(step_line, report.steps)]
    if report.kind == "shared-prefix":
        cold, warm = report.mean("ttft_s", "cold"), report.mean("ttft_s", "warm")
        rate = report.hit_rate()
        out.append(
            f"TTFT cold {_num(cold, '.3f', 's')}, warm {_num(warm, '.3f', 's')}; prefix-cache hit rate "
            f"{_num(None if rate is None else rate * 100, '.1f', '%')} (cold made by {report.cold_method})"
        )
    out += [f"skipped: {line}" for line in report.skipped]
    out += [f"note: {line}" for line in report.notes]
    return out
