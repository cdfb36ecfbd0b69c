"""The decode ceiling on known numbers, computed by hand."""

from __future__ import annotations

import pytest

from llm_dyno.core.diagnose.roofline import (
    GIB,
    bandwidth_for,
    decode_ceiling,
    known_bandwidth,
    roofline,
    weights_bytes_from_log,
)
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
    assert roofline(log("founding_launch.log").lines, "NVIDIA GeForce RTX 3090") is None


def test_roofline_from_log_and_table() -> None:
    r = roofline(log("clean_gb10.log").lines, "NVIDIA H200", mean_acceptance_length=2.5, achieved_tps=48.2)
    assert r is not None
    assert r.ceiling_tps == pytest.approx(4800e9 / (23.43 * GIB) * 2.5)
    assert r.bandwidth_source == "H200 datasheet"
