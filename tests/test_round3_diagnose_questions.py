"""Issue 28: the founding post's six questions, each answered with a verdict and its evidence, in the
JSON of `llm-dyno diagnose` run in a child process (shipped founding profile, log and reference)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"


def test_the_posts_six_questions_are_answered(tmp_path: Path) -> None:
    done = cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml"))
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed",
               "--log", str(FOUNDING_LOG), "--tps", "43", "54", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in json.loads(done.stdout)["questions"]}
    assert list(answers) == [
        "piecewise", "drafted-throughput", "compile-cache", "model-path", "patches", "batched-tokens"
    ]  # fmt: skip
    assert (
        answers["piecewise"]["verdict"] == "unknown" and "--reference-log" in answers["piecewise"]["evidence"]
    )
    drafted = answers["drafted-throughput"]
    # K × TPS / mean length: 3 × 43 / 3.55 = 36.3 against 3 × 66 / 3.37 = 58.8
    assert "= 36.3 tok/s" in drafted["evidence"] and "= 58.8 tok/s" in drafted["evidence"]
    assert drafted["verdict"].endswith("time per pass is the bottleneck")
    assert answers["compile-cache"]["verdict"] == "no: start-up time only"
    assert "no-Genesis MTP 54.7 / 68.2" in answers["patches"]["evidence"]
    assert answers["patches"]["verdict"] == "not the difference"
    assert "--max-num-batched-tokens 2048" in answers["batched-tokens"]["question"]
    # the text output shows them too
    text = cli(tmp_path, "diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed",
               "--log", str(FOUNDING_LOG), "--tps", "43", "54").stdout  # fmt: skip
    assert "questions, answered:" in text and "[no: start-up time only]" in text


def test_with_the_references_boot_log_the_piecewise_question_is_answered(tmp_path: Path) -> None:
    # real docker logs of an MTP start-up with FlashInfer, downgraded to PIECEWISE (samples/05)
    ref_log = REPO / "tests" / "fixtures" / "logs" / "ref_gpu_startup_mtp.log"
    assert cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml")).returncode == 0
    done = cli(tmp_path, "diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed",
               "--log", str(FOUNDING_LOG), "--reference-log", str(ref_log),
               "--tps", "43", "54", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    piecewise = json.loads(done.stdout)["questions"][0]
    assert piecewise["id"] == "piecewise" and piecewise["verdict"] == "yes, as yours: not the difference"
