"""The privileged helper's clock actions, at the NVML boundary: the recorded H200's supported clocks
(``tests/support/nvml_shim``, which records every lock and reset). A clock the GPU does not list, a
value that is not a number and a domain other than sm / mem are refused (exit 2) before anything is
set; ``reset-clocks`` resets both locks. (The helper runs here under this venv's Python without ``-I``,
so that the stand-in can take pynvml's place; as root it runs isolated, see the hardening test.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HELPER = REPO / "packaging" / "llm-dyno-power-helper"
SHIM = REPO / "tests" / "support" / "nvml_shim"
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"


def _helper(sets: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SHIM), "LLM_DYNO_TEST_NVML": str(RECORDING),
           "LLM_DYNO_TEST_NVML_SETS": str(sets)}  # fmt: skip
    cmd = [sys.executable, str(HELPER), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_helper_locks_only_supported_clocks_and_resets_both(tmp_path: Path) -> None:
    sets = tmp_path / "nvml-sets.txt"
    refused = [
        (("lock-clocks", "0", "sm", "1234"), "1234 MHz is not a supported sm clock of GPU 0"),
        (("lock-clocks", "0", "mem", "3000"), "3000 MHz is not a supported mem clock of GPU 0"),
        (("lock-clocks", "0", "sm", "1410; reboot"), "MHz must be a positive integer"),
        (("lock-clocks", "0", "gpu", "1410"), "the clock must be 'sm' or 'mem'"),
        (("lock-clocks", "3", "sm", "1410"), "no GPU 3 (this machine has 1)"),
        (("reset-clocks",), "expected 'set GPU_INDEX WATTS'"),
    ]
    for args, message in refused:
        done = _helper(sets, *args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    assert not sets.exists()  # nothing reached NVML's setters
    for args in (
        ("lock-clocks", "0", "sm", "1410"),
        ("lock-clocks", "0", "mem", "2201"),
        ("reset-clocks", "0"),
    ):
        done = _helper(sets, *args)
        assert done.returncode == 0, (args, done.stderr)
    assert sets.read_text().splitlines() == [
        "0 sm-lock 1410 1410",
        "0 mem-lock 2201 2201",
        "0 sm-reset",
        "0 mem-reset",
    ]
