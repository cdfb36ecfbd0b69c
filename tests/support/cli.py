"""``llm-dyno ARGS`` in a subprocess, as a user's shell runs it, with the data folder of the test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def cli(
    home: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m llm_dyno ARGS`` with ``LLM_DYNO_HOME=home`` and NO_COLOR in ``env`` (this process's
    environment when None); never raises on a non-zero exit (the test reads ``returncode``)."""
    base = dict(os.environ if env is None else env)
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env={**base, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def cli_in(home: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """:func:`cli` in the environment ``env`` (e.g. with the variables a launch reads)."""
    return cli(home, *args, env=env)
