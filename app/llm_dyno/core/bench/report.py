"""Outputs people paste: CSV (one row per run) and the one-line Markdown summary used in forum posts."""

from __future__ import annotations

import csv
import io
from typing import Any

from llm_dyno.core.bench.request_acceptance import combine
from llm_dyno.core.bench.result import BenchResult, PromptResult
from llm_dyno.core.bench.run_readings import sum_acceptance
from llm_dyno.core.textsafe import csv_cell

CSV_COLUMNS = (
    "prompt",
    "index",
    "warmup",
    "counted",
    "ttft_s",
    "wall_s",
    "completion_tokens",
    "wall_tps",
    "decode_tps",
    "finish_reason",
    "acceptance_rate",
    "mean_acceptance_length",
    "per_position",
    "drafts",
    "draft_tokens",
    "accepted_tokens",
    "generation_tokens_delta",
    "energy_j",
    "tokens_per_j",
    "mean_power_w",
    "peak_power_w",
    "peak_power_source",
    "sampled_mean_power_w",
    "max_temperature_c",
    "itl_mean_s",
    "itl_p99_s",
    "tpot_s",
    "e2e_s",
    "warnings",
)

# How the community abbreviates its prompts in result lines.
_SHORT = {"narrative": "narr"}


def to_csv(result: BenchResult) -> str:
    """One row per run, warm-ups included (flagged); ``counted`` 0 marks a run left out of the headline
    figures (a warm-up, one that stopped early or one whose figures cannot be true)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in result.all_runs():
        a, e, lat, peer = r.acceptance, r.energy, r.latency, r.peer
        row: list[Any] = [
            r.prompt,
            r.index,
            int(r.warmup),
            int(not r.warmup and not r.left_out),
            r.ttft_s,
            r.wall_s,
            r.completion_tokens,
            r.wall_tps,
            None if r.burst else r.decode_tps,
            r.finish_reason,
            a.rate if a else None,
            a.mean_length if a else None,
            " ".join(f"{x:.4f}" for x in a.per_position) if a else None,
            a.drafts if a else None,
            a.draft_tokens if a else None,
            a.accepted_tokens if a else None,
            r.generation_tokens_delta,
            e.energy_j if e else None,
            e.tokens_per_j if e else None,
            e.mean_power_w if e else None,
            e.peak_power_w if e else None,
            e.peak_power_source if e else None,
            e.sampled_mean_power_w if e else None,
            e.max_temperature_c if e else None,
            lat.mean_s if lat else None,
            lat.p99_s if lat else None,
            peer.tpot_s if peer else None,
            peer.e2e_s if peer else None,
            " | ".join(r.warnings),
        ]
        # prompt names, finish reasons and warnings come from the suite and the server: made inert
        writer.writerow(["" if v is None else csv_cell(v) if isinstance(v, str) else v for v in row])
    return out.getvalue()


def _num(value: float) -> str:
    return f"{value:.1f}"


def markdown_line(result: BenchResult) -> str:
    """``narr 45.1 / code 58.6 TPS · accept 93/87/74 % · 330 W · vLLM 0.19.2 · RTX 3090``.

    Wall TPS means of the counted runs (those that stopped early left out); acceptance per position
    from the counts summed over all measured runs; parts that are unknown are left out.
    """
    parts: list[str] = []
    tps = [
        f"{_SHORT.get(p.name, p.name)} {_num(s.mean)}"
        for p in result.prompts
        if (s := p.summary("wall_tps")) is not None
    ]
    if tps:
        parts.append(" / ".join(tps) + " TPS")
    acc = sum_acceptance([p.acceptance for p in result.prompts])
    if acc is not None and acc.per_position:
        parts.append("accept " + "/".join(f"{x * 100:.0f}" for x in acc.per_position) + " %")
    elif acc is not None and acc.rate is not None:
        parts.append(f"accept {acc.rate * 100:.0f} %")
    ctx = result.context
    limit = ctx.power_limit_w
    if isinstance(limit, int | float):
        parts.append(f"{limit:.0f} W")
    if ctx.vllm_version:
        parts.append(f"vLLM {ctx.vllm_version}")
    if ctx.gpu:
        parts.append(ctx.gpu)
    return " · ".join(parts)


def burst_note(result: BenchResult) -> str | None:
    """Said once per result, in words: how many counted runs arrived in a burst and what is measured for
    them instead of decode TPS; None when none did."""
    counted = [r for p in result.prompts for r in p.counted]
    bursts = [r for r in counted if r.burst]
    if not bursts:
        return None
    return (
        f"{len(bursts)} of {len(counted)} runs arrived in a burst: the server sent their tokens all at once "
        "(vLLM on the CPU often does), so the time between tokens, and with it decode TPS, could not be "
        "seen. Their wall TPS (tokens / the whole run's time) and TTFT are measured and counted; decode TPS "
        "comes from the other runs only."
    )


def prompt_lines(result: BenchResult) -> list[str]:
    """Per prompt: ``vllm bench serve``'s figures (mean, median, p99), what the headlines left out, and
    the thermal state its runs started from.

    ``code: TTFT 12.1 / TPOT 2.90 / ITL 2.88 / E2E 751 ms (mean) · 340.2 tok/s output;
    median TTFT 11.90 / TPOT 2.88 / ITL 2.80 / E2E 748.00, p99 TTFT 15.00 / … ms · 1 of 5 runs left out
    (stopped early)``
    """
    lines: list[str] = []
    for p in result.prompts:
        peer = p.peer()
        if peer is None:
            text = f"{p.name}: vllm bench serve figures n/a (no chunk timings in this result)"
        else:
            spreads = (peer.ttft, peer.tpot, peer.itl, peer.e2el)
            median, p99 = (
                " / ".join(
                    f"{name} " + ("—" if s is None else f"{getattr(s, attr):.2f}")
                    for name, s in zip(("TTFT", "TPOT", "ITL", "E2E"), spreads, strict=True)
                )
                for attr in ("median_ms", "p99_ms")
            )
            text = f"{p.name}: {peer.describe()}; median {median}, p99 {p99} ms"
        note = p.exclusion_note()
        states = {r.thermal.describe().split("; run started")[0] for r in p.measured if r.thermal is not None}
        thermal = f" · thermal: {' / '.join(sorted(states))}" if states else ""
        lines.append(text + (f" · {note}" if note else "") + thermal + _acceptance_text(p))
    return lines


def _acceptance_text(p: PromptResult) -> str:
    """`` · acceptance 85 % len 3.4 (/metrics), per request 85 % len 3.4 (server, 5 requests)``."""
    parts = []
    acc = p.acceptance
    if acc is not None and acc.rate is not None:
        length = f" len {acc.mean_length:.2f}" if acc.mean_length is not None else ""
        parts.append(f"acceptance {acc.rate * 100:.0f} %{length} (/metrics)")
    req = combine(r.request_acceptance for r in p.measured)
    if req is not None:
        parts.append(
            f"per request {req.rate * 100:.0f} % len {req.mean_length:.2f} (server, {req.requests} requests)"
        )
    return " · " + ", ".join(parts) if parts else ""
