"""Issue 28: ``llm-dyno diagnose --post FILE`` reads a pasted forum post (the founding post, copied into
the test's folder) as a launch log and typed figures, through the CLI in a child process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
# the founding post as its author pasted it (the project's founding case, /work/shared/reference)
FOUNDING_POST = REPO / "tests" / "fixtures" / "diagnose" / "founding_post.txt"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    done = cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml"))
    assert done.returncode == 0, done.stderr
    return tmp_path


@pytest.fixture
def post(tmp_path: Path) -> Path:
    return Path(shutil.copy(FOUNDING_POST, tmp_path / "founding-post.txt"))


def _json(home: Path, *args: str) -> dict[str, Any]:
    done = cli(home, "diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *args, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _line_of(post: Path, text: str) -> int:
    lines = post.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_the_post_alone_gives_the_split(home: Path, post: Path) -> None:
    split = _json(home, "--post", str(post))["gap_split"]
    assert split is not None, "the post's figures must make the split"
    assert split["acceptance_is_cause"] is False and split["held_by"] == "time per pass"
    narr = split["prompts"][0]
    assert narr["prompt"] == "narrative"
    assert 82.0 <= narr["ms_per_pass"]["yours"] < 83.0  # 3.55 / 43 (the post's "~43 narrative")
    assert narr["ms_per_pass"]["reference"] == pytest.approx(51.1, abs=0.05)  # 3.37 / 66
    assert narr["tokens_per_pass"]["yours_source"].startswith("mean acceptance length (post line ")


def test_the_boot_facts_the_post_states_each_with_its_line(home: Path, post: Path) -> None:
    facts = {r["fact"]: r for r in _json(home, "--post", str(post))["boot_log"]}
    want = {
        "CUDA-graph mode": "PIECEWISE (downgraded from FULL_AND_PIECEWISE",
        "attention backend": "FLASHINFER",
        "CUDA graph sizes captured": "4: 1,2,4,8",
        "model weights in memory": "16.87 GiB",
        "start-script patches": "20/21 applied, 0 failed",
        "vLLM version": "0.19.2rc1.dev21+g893611813",
        "torch.compile time": "65 s",
    }
    for fact, starts in want.items():
        row = facts[fact]
        assert row["yours"] is not None and starts in row["yours"], (fact, row)
        assert row["yours_where"].startswith("post line "), (fact, row)
    # the downgrade is read from the wrapped "Key Warning" (three lines joined), the last word on it:
    # the summary above it misspells the mode ("PIEWISE")
    warning = _line_of(post, "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for")
    assert facts["CUDA-graph mode"]["yours_where"] == f"post line {warning}"
    assert facts["CUDA-graph mode"]["yours"].startswith("PIECEWISE ")
    assert facts["model weights in memory"]["yours_where"] == f"post line {_line_of(post, 'Model VRAM:')}"
    assert facts["attention backend"]["yours_where"] == f"post line {_line_of(post, 'Attention backend:')}"
    # "20/21 applied" is said twice in the post: read once
    assert facts["start-script patches"]["yours"].count("applied") == 1


def test_typed_flags_win_over_the_post_and_say_so(home: Path, post: Path) -> None:
    data = _json(home, "--post", str(post), "--tps", "50", "54")
    narr = data["gap_split"]["prompts"][0]
    assert narr["ms_per_pass"]["yours"] == pytest.approx(3.55 / 50 * 1000, abs=0.05)
    assert any("typed narrative TPS 50 is used; the post says 43" in n for n in data["notes"])
    assert not any("code TPS" in n for n in data["notes"])  # 54 typed = 54 in the post: no note


def test_the_post_on_stdin(home: Path, post: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "diagnose", "qwen36-27b-mtp", "--reference",
         "recipe-3090-claimed", "--post", "-"],
        input=post.read_text(encoding="utf-8"), capture_output=True, text=True, timeout=120,
        env={**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "The gap is in time per pass, not acceptance" in done.stdout
    assert "yours FLASHINFER [post line " in done.stdout


def test_a_post_larger_than_1_mib_is_refused_saying_what_to_do(home: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("Attention backend: FlashInfer\n" * 40_000, encoding="utf-8")  # ~1.2 MB
    done = cli(home, "diagnose", "qwen36-27b-mtp", "--post", str(big))
    assert done.returncode != 0
    assert "big.txt" in done.stderr and "1 MiB" in done.stderr and "--log" in done.stderr


def test_a_missing_post_is_named(home: Path, tmp_path: Path) -> None:
    done = cli(home, "diagnose", "qwen36-27b-mtp", "--post", str(tmp_path / "nope.txt"))
    assert done.returncode != 0 and "cannot read the post" in done.stderr and "nope.txt" in done.stderr


def test_findings_and_causes_name_the_post_line_they_read(home: Path, post: Path) -> None:
    data = _json(home, "--post", str(post))
    downgrade = next(f for f in data["findings"] if f["id"] == "cuda-graphs-downgraded")
    warning = _line_of(post, "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for")
    assert any(e.startswith(f"post line {warning}: CUDAGraphMode.") for e in downgrade["evidence"])
    assert not any(e.startswith("log:") for e in downgrade["evidence"])
    power = next(c for c in data["causes"] if c["id"] == "power")
    assert "your cap 330 W (post line 1)" in power["reason"]  # "~54 code TPS at 330W" on line 1
    assert any(s.startswith("post founding-post.txt (") for s in data["sources"])
    assert not any(s.startswith("typed ") for s in data["sources"])
