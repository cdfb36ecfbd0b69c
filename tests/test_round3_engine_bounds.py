"""Issue 29, class 9: every answer of a Docker engine is bounded in size and total time. A fake engine
made here (tests/support/fake_engine.py) streams ``/containers/json`` for ever, drips it a byte every
2 s, drips its status line, or breaks it off; ``DOCKER_HOST=tcp://… llm-dyno status`` finishes in
bounded time with a message that names the engine's answer, and stays small."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_engine import FakeEngine

# the status's own run: RSS of the CLI alone (the parent python here has no other child)
_MEASURE = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run([sys.executable, '-m', 'llm_dyno', 'status'], capture_output=True, text=True)\n"
    "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr)\n"
    "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(done.returncode)\n"
)


def _status(home: Path, engine: FakeEngine) -> tuple[subprocess.CompletedProcess[str], float, int]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1", "DOCKER_HOST": engine.url}
    env.pop("DOCKER_CONTEXT", None)
    env.pop("DOCKER_TLS_VERIFY", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    took = time.monotonic() - started
    rss = [int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("MAXRSS_KB")]
    return done, took, rss[0] if rss else 0


@pytest.mark.parametrize("shape", ["endless", "drip", "drip-headers", "cut"])
def test_status_is_bounded_against_an_engine_that_never_finishes_its_answer(
    shape: str, tmp_path: Path
) -> None:
    with FakeEngine(shape) as engine:
        done, took, rss_kb = _status(tmp_path / "home", engine)
    assert "Traceback" not in done.stderr, done.stderr
    assert any("/containers/json" in p for p in engine.requests), engine.requests
    # the engine's answer is named, with what broke the bound
    assert "the Docker engine's /v1.43/containers/json" in done.stderr, done.stderr
    if shape == "endless":
        assert "the answer is over 16 MiB; refused" in done.stderr, done.stderr
    elif shape == "cut":
        assert "json: the answer broke off" in done.stderr, done.stderr
    else:
        assert "no complete answer within 15 s" in done.stderr, done.stderr
    assert took < 60, f"status took {took:.0f} s"
    assert 0 < rss_kb < 400 * 1024, f"status grew to {rss_kb // 1024} MiB"
