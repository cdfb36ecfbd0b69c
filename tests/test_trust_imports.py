"""Parallel imports through the real CLI: several ``llm-dyno profile import`` processes started
together for one name (or spellings of one name that map to the same file) without ``--replace``:
exactly one wins, every other says "already exists", and no file is lost or half-written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_dyno.core.profiles.store import ProfileStore
from tests.test_hostile_files import SHIPPED

PROCESSES = 6


def _together(home: Path, names: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """``profile import cpu-demo.yaml --name N`` for each name, all started before any is waited for."""
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "llm_dyno", "profile", "import", str(SHIPPED), "--name", name],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.mark.parametrize(
    "names",
    [
        ["same-name"] * PROCESSES,
        ["My Model", "my-model", "MY MODEL", "my model", "My-Model", "mY mOdEl"][:PROCESSES],
    ],
    ids=["one name", "spellings of one file name"],
)
def test_parallel_imports_one_wins_the_others_are_refused(names: list[str], tmp_path: Path) -> None:
    done = _together(tmp_path, names)
    won = [d for d in done if d.returncode == 0]
    lost = [d for d in done if d.returncode != 0]
    assert len(won) == 1, [d.stdout + d.stderr for d in done]
    for d in lost:
        assert "already exists" in d.stderr, d.stderr
        assert "Traceback" not in d.stderr
    folder = tmp_path / "config" / "profiles"
    files = sorted(p.name for p in folder.glob("*.yaml"))
    assert len(files) == 1, files
    report = ProfileStore(folder).load_all()
    assert not report.errors and len(report.profiles) == 1
    winner = report.profiles[0].profile.name
    assert f"as profile {winner!r}" in won[0].stdout
    assert not list(folder.glob(".*.tmp"))  # no half-written file left behind
