"""Issue 28: the verify batch outside the captured CUDA-graph sizes is a finding with the exact change,
through `llm-dyno diagnose --json` in a child process, on the founding log with its capture sizes cut
to 1 (the case the issue quotes: "verify batch … runs eager, largest captured 1")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
SIZES = "'cudagraph_capture_sizes': [1, 2, 4, 8], 'max_cudagraph_capture_size': 8"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    done = cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml"))
    assert done.returncode == 0, done.stderr
    return tmp_path


def _json(home: Path, log: Path) -> dict[str, Any]:
    done = cli(home, "diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", "--log", str(log),
               "--tps", "43", "54", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_verify_batch_above_the_captured_sizes_is_a_finding_with_the_change(
    home: Path, tmp_path: Path
) -> None:
    text = FOUNDING_LOG.read_text(encoding="utf-8")
    assert SIZES in text
    log = tmp_path / "one-size.log"
    log.write_text(text.replace(SIZES, "'cudagraph_capture_sizes': [1], 'max_cudagraph_capture_size': 1"))
    data = _json(home, log)
    f = next(f for f in data["findings"] if f["id"] == "verify-batch-not-captured")
    assert f["severity"] == "high"
    assert f["title"].startswith("The verify batch (1 seq × (3+1) = 4 tokens) runs eager")
    assert f["changes"] == [
        {"kind": "set_flag", "key": "compilation-config", "value": '{"cudagraph_capture_sizes":[1,4]}'}
    ]
    assert "--compilation-config '{\"cudagraph_capture_sizes\":[1,4]}'" in f["advice"]
    capture = next(c for c in data["causes"] if c["id"] == "capture")
    assert capture["verdict"] == "likely" and capture["finding"] == "verify-batch-not-captured"


def test_a_captured_verify_batch_is_no_finding(home: Path) -> None:
    data = _json(home, FOUNDING_LOG)  # captured 1,2,4,8: the batch of 4 is inside
    assert "verify-batch-not-captured" not in [f["id"] for f in data["findings"]]


def test_the_backend_advice_knows_an_ampere_card(home: Path) -> None:
    data = _json(home, FOUNDING_LOG)  # FlashInfer downgraded to PIECEWISE; the reference's RTX 3090
    advice = next(f for f in data["findings"] if f["id"] == "cuda-graphs-downgraded")["advice"]
    assert "RTX 3090 (SM 8.6; the reference's GPU, yours is not known)" in advice
    assert "--attention-backend TRITON_ATTN with --kv-cache-dtype fp8_e5m2" in advice
    assert "--attention-backend FLASH_ATTN with --kv-cache-dtype auto" in advice
    assert "vllm PR #42569" in advice and "vllm #54992" in advice
