"""Parallel imports through the real CLI: several ``llm-dyno profile import`` processes started
together for one name (or spellings of one name that map to the same file) without ``--replace``:
exactly one wins, every other says "already exists", and no file is lost or half-written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_dyno.core.profiles.store import ProfileStore
from tests.test_hostile_files import SHIPPED

PROCESSES = 12
READY_S = 60.0


def _blocked_on_stdin(pid: int) -> bool:
    """Whether the process waits in read(0, …): it has started and imported everything it needs, and
    reads the text to import from the pipe the test has not written yet."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and fields[1] == "0x0"


def _together(home: Path, names: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """``profile import - --name N`` for each name: every process is started and left blocked reading
    its standard input (a barrier), then the text is written to all of them at once, so that they
    reach the store together rather than one Python start-up apart."""
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "llm_dyno", "profile", "import", "-", "--name", name],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in names
    ]
    deadline = time.monotonic() + READY_S
    while not all(_blocked_on_stdin(p.pid) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_blocked_on_stdin(p.pid) for p in procs), "the imports never reached their read"
    text = SHIPPED.read_bytes()
    for proc in procs:  # the barrier opens: nothing but a write and a close between two processes
        assert proc.stdin is not None
        proc.stdin.write(text)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    done = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        proc.wait(timeout=120)  # stdin is closed already: communicate() would flush it
        out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.mark.parametrize(
    "names",
    [
        ["same-name"] * PROCESSES,
        ["My Model", "my-model", "MY MODEL", "my model", "My-Model", "mY mOdEl"] * (PROCESSES // 6),
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
