"""``llm-dyno diagnose`` and ``llm-dyno reference`` through the real CLI entry point."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from llm_dyno.cli import run as run_cli
from llm_dyno.core.profiles.store import ProfileStore
from tests.core.diagnose.helpers import FIXTURES, founding_profile


def run(argv: list[str]) -> int:
    """The real entry point, as `llm-dyno ARGV` runs it (user errors become exit code 2)."""
    return run_cli(argv)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    return tmp_path


def test_diagnose_a_stored_profile_reads_its_latest_log(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ProfileStore().save(founding_profile())
    logs = home / "data" / "logs"
    logs.mkdir(parents=True)
    old = logs / "vllm-qwen36-27b-0123456789ab.log"
    old.write_text("nothing here\n")
    os.utime(old, (1, 1))
    shutil.copy(FIXTURES / "founding_launch.log", logs / "vllm-qwen36-27b-20260101-120000.log")
    assert run(["diagnose", "vllm-qwen36-27b", "--reference", "recipe-3090-claimed", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ids = [f["id"] for f in out["findings"]]
    assert "cuda-graphs-downgraded" in ids and "compile-cache-not-on-volume" in ids
    assert "image-differs-from-reference" in ids


def test_measured_tps_rank_the_image_first(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ProfileStore().save(founding_profile())
    log_file = str(FIXTURES / "founding_launch.log")
    argv = ["diagnose", "vllm-qwen36-27b", "--reference", "recipe-3090-claimed", "--log", log_file]
    assert run([*argv, "--tps", "43", "54", "--json"]) == 0
    ids = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert ids.index("image-differs-from-reference") < ids.index("cuda-graphs-downgraded")


def test_diagnose_text_output_with_a_given_log(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ProfileStore().save(founding_profile())
    assert run(["diagnose", "vllm-qwen36-27b", "--log", str(FIXTURES / "cudagraph_none.log")]) == 0
    text = capsys.readouterr().out
    assert "[high] CUDA graphs downgraded from FULL_AND_PIECEWISE to NONE" in text
    assert "log:2: CUDAGraphMode.FULL_AND_PIECEWISE" in text


def test_reference_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["reference", "list"]) == 0
    assert "recipe-3090-claimed" in capsys.readouterr().out
    assert run(["reference", "show", "recipe-3090-claimed", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["numbers"]["narrative_tps"] == 66.0
