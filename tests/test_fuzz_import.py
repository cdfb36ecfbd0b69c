"""The import fuzz (benchmarks/fuzz_import.py) kept alive: each shape for 300 seeded cases (17 of each
through the CLI); the 10,000-case run's table is benchmarks/results/fuzz_import.txt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_import_fuzz_finds_no_leak_and_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "app"), str(REPO)])
    ran = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "fuzz_import.py"), "300"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in ran.stdout.splitlines()[1:] if line[:1] != " "}
    assert set(rows) == {"env_files", "docker_run", "secrets"}, ran.stdout
    for shape, row in rows.items():
        cases, accepted, refused, cli, failures = map(int, row[1:6])
        assert cases == 300 and accepted + refused == 300 and cli == 18 and failures == 0, (shape, row)
        assert accepted > 0 and refused > 0, (shape, row)  # both paths were walked
