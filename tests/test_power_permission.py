"""``llm-dyno power set`` as a user who is not root: NVML refuses the change (the recorded H200 at the
NVML boundary, refusing as the driver does), so the app asks the privileged helper through pkexec with
an argument list, or, with no helper installed, says how to install one. pkexec needs polkit and a
session, which this machine lacks: a stand-in on PATH records what it was asked to run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIM = REPO / "tests" / "support" / "nvml_shim"
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
HELPER = REPO / "packaging" / "llm-dyno-power-helper"  # root-owned in this checkout, as installed


def _power_set(tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    asked = tmp_path / "pkexec.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    pkexec = bin_dir / "pkexec"
    pkexec.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {asked}\n")
    pkexec.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "LLM_DYNO_POWER_HELPER"} | {
        "LLM_DYNO_HOME": str(tmp_path / "home"),
        "PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}",
        "LLM_DYNO_TEST_NVML": str(RECORDING),
        "LLM_DYNO_TEST_NVML_SETS": str(tmp_path / "nvml-sets.txt"),
        "LLM_DYNO_TEST_NVML_NO_PERMISSION": "1",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        **extra,
    }
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "power", "set", "300", "--gpu", "0"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return done, (asked.read_text().splitlines() if asked.exists() else [])


def test_without_permission_the_helper_is_asked(tmp_path: Path) -> None:
    done, asked = _power_set(tmp_path, LLM_DYNO_POWER_HELPER=str(HELPER))
    assert done.returncode == 0, done.stderr
    assert asked == [f"{HELPER} set 0 300"]  # watts as a separate argument, never a shell string
    assert (tmp_path / "nvml-sets.txt").read_text().splitlines() == ["0 denied power"]  # NVML first
    # the limit is read back after the helper ran (the stand-in helper changes nothing: 700 W)
    assert "power limit now 700 W" in done.stdout


def test_without_permission_and_without_a_helper_it_says_how(tmp_path: Path) -> None:
    done, asked = _power_set(tmp_path, LLM_DYNO_POWER_HELPER=str(tmp_path / "not-installed"))
    assert done.returncode == 2 and asked == []
    assert "needs root (NVML: no permission)" in done.stderr and "llm-dyno-power-helper" in done.stderr
