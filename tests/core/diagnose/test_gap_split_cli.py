"""The founding case through `llm-dyno diagnose` in a child process: the shipped founding profile, the
shipped reference, the post's TPS and a launch log of that setup built from real lines
(tests/fixtures/diagnose/founding_launch.log names the source of each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
# real docker logs of an MTP start-up with FlashInfer (shared/reference/samples/05), as "the reference's" log
REFERENCE_LOG = REPO / "tests" / "fixtures" / "logs" / "ref_gpu_startup_mtp.log"


def llm_dyno(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """``llm-dyno ARGS`` as a user runs it, with its own home."""
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    done = llm_dyno(["profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml")], tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


ARGS = ["diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", "--log", str(FOUNDING_LOG),
        "--tps", "43", "54"]  # fmt: skip


def _json(home: Path, *extra: str) -> dict[str, Any]:
    done = llm_dyno([*ARGS, *extra, "--json"], home)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_the_split_puts_the_gap_in_time_per_pass_not_acceptance(home: Path) -> None:
    split = _json(home)["gap_split"]
    assert split["held_by"] == "time per pass" and split["acceptance_is_cause"] is False
    assert split["uniform"] is True  # 43/66 = 0.65, 54/84 = 0.64
    narr, code = split["prompts"]
    # ms per pass = tokens per pass / TPS: the log's 3.55 for yours, 1 + 0.92 + 0.81 + 0.64 = 3.37 for theirs
    assert narr["ms_per_pass"]["yours"] == pytest.approx(3.55 / 43 * 1000, abs=0.01)
    assert narr["ms_per_pass"]["reference"] == pytest.approx(3.37 / 66 * 1000, abs=0.01)
    assert code["ms_per_pass"]["yours"] == pytest.approx(3.55 / 54 * 1000, abs=0.01)
    assert code["ms_per_pass"]["reference"] == pytest.approx(3.37 / 84 * 1000, abs=0.01)
    assert narr["tokens_per_pass"]["ratio"] == pytest.approx(3.55 / 3.37)
    assert narr["tokens_per_pass"]["yours_source"] == "mean acceptance length (log: 1 SpecDecoding line)"
    assert "not acceptance" in split["verdict"] and "82.6 vs 51.1 ms per pass" in split["verdict"]


def test_the_text_output_states_the_split_and_the_causes(home: Path) -> None:
    done = llm_dyno(ARGS, home)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert (
        "The gap is in time per pass, not acceptance: narrative 82.6 vs 51.1 ms per pass (×1.62); code "
        "65.7 vs 40.1 ms per pass (×1.64); tokens per pass 3.55 vs 3.37 (×1.05), so acceptance is not the "
        "cause."
    ) in out
    assert "[not the cause] Acceptance (tokens per pass): 3.55 tokens per pass vs the reference's 3.37" in out
    assert "[not the cause] Power cap: your cap 330 W is above the reference's 230 W." in out
    assert "≠ vLLM version: yours 0.19.2rc1.dev21+g893611813 [log:24]" in out
    assert "? CUDA-graph mode: yours PIECEWISE (downgraded from FULL_AND_PIECEWISE" in out


def test_boot_facts_that_differ_come_first_and_unknown_ones_say_how_to_get_them(home: Path) -> None:
    rows = _json(home)["boot_log"]
    status = [r["status"] for r in rows]
    assert status == sorted(status, key=["differs", "unknown", "same"].index)
    differs = {r["fact"]: r for r in rows if r["status"] == "differs"}
    assert set(differs) == {"vLLM version", "image digest"}
    assert differs["image digest"]["yours"].startswith("sha256:9bba4628")
    facts = {r["fact"]: r for r in rows}
    assert (
        facts["CUDA-graph mode"]["yours_where"] == "log:4" and facts["CUDA-graph mode"]["reference"] is None
    )
    assert "cudagraph_mode" in facts["CUDA-graph mode"]["how_to_get"]
    assert facts["attention backend"]["yours"] == "FLASHINFER"
    assert facts["CUDA graph sizes captured"]["yours"] == "4: 1,2,4,8 (largest 8)"
    assert facts["verify batch in captured sizes"]["yours"].startswith("yes (1 seq × (3+1) = 4 tokens")
    assert facts["max capture size truncated"]["yours"] == "no"
    assert facts["model weights in memory"]["yours"] == "16.87 GiB"
    assert facts["torch.compile time"]["yours"] == "71.54 s (2 parts)"
    assert facts["start-script patches"]["yours"].startswith("Genesis v5.10 20/21 applied, 0 failed")
    assert facts["KV cache dtype"] == {**facts["KV cache dtype"], "yours": "fp8_e5m2", "status": "same"}


def test_causes_follow_the_field_ranking_with_verdicts(home: Path) -> None:
    causes = {c["id"]: c for c in _json(home)["causes"]}
    assert causes["build"]["verdict"] == "likely"
    assert causes["piecewise"]["verdict"] == "possible"  # the reference's mode is not known
    assert causes["acceptance"]["verdict"] == "not the cause"
    assert (
        causes["power"]["verdict"] == "not the cause"
        and "above the reference's 230 W" in causes["power"]["reason"]
    )
    assert causes["capture"]["verdict"] == "not the cause"
    assert causes["protocol"]["verdict"] == "too small alone"
    verdicts = [c["verdict"] for c in _json(home)["causes"]]
    order = ["likely", "possible", "unknown", "too small alone", "not the cause"]
    assert verdicts == sorted(verdicts, key=order.index)


def test_a_reference_log_fills_the_reference_side(home: Path) -> None:
    data = _json(home, "--reference-log", str(REFERENCE_LOG))
    facts = {r["fact"]: r for r in data["boot_log"]}
    assert (
        facts["attention backend"]["reference"] == "FLASHINFER"
        and facts["attention backend"]["status"] == "same"
    )
    # that start-up profiled one PIECEWISE graph of size 1: a 4-token verify batch runs eager there
    assert facts["verify batch in captured sizes"]["reference"].startswith("NO: runs eager")
    assert facts["verify batch in captured sizes"]["status"] == "differs"
    causes = {c["id"]: c for c in data["causes"]}
    assert causes["piecewise"]["verdict"] == "not the cause"  # both logs show the same downgrade


def test_a_missing_reference_log_is_a_clear_error(home: Path) -> None:
    done = llm_dyno([*ARGS, "--reference-log", str(home / "nope.log")], home)
    assert done.returncode == 2 and "cannot read the reference log" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [("{not json", "not a benchmark result"), ('{"prompts": 3}', 'no "prompts" list'),
     ('{"prompts": [{"name": "narrative", "runs": [{"wall_s": "x"}]}]}', "a benchmark result with a bad")],
)  # fmt: skip
def test_a_bad_bench_file_is_refused_with_its_name(home: Path, content: str, said: str) -> None:
    bad = home / "result.json"
    bad.write_text(content)
    done = llm_dyno(["diagnose", "--bench", str(bad), "--reference", "recipe-3090-claimed"], home)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert str(bad) in done.stderr and said in done.stderr, done.stderr
    missing = llm_dyno(["diagnose", "--bench", str(home / "nope.json")], home)
    assert missing.returncode != 0 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_without_speculative_decoding_a_pass_is_one_token(tmp_path: Path) -> None:
    """Neither side speculates: no acceptance is needed, one token per pass on each, so the whole gap is
    in time per pass (it asked for acceptance that such a setup cannot have)."""
    done = llm_dyno(["profile", "import", str(REPO / "profiles" / "qwen36-27b-no-spec.yaml")], tmp_path)
    assert done.returncode == 0, done.stderr
    args = [
        "diagnose",
        "qwen36-27b-no-spec",
        "--reference",
        "recipe-3090-minimal-no-spec",
        "--tps",
        "30",
        "30",
    ]
    done = llm_dyno([*args, "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    split = json.loads(done.stdout)["gap_split"]
    assert split is not None and split["held_by"] == "time per pass", split
    for prompt in split["prompts"]:
        assert prompt["tokens_per_pass"]["yours"] == prompt["tokens_per_pass"]["reference"] == 1.0
        assert prompt["tokens_per_pass"]["yours_source"] == "no speculative decoding: one token per pass"
