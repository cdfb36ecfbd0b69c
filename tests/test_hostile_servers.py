"""Hostile servers through the real CLI in a subprocess: every answer bounded in size and time,
a clear message, the finished runs kept. Peak memory is the child's own (VmHWM), time is wall."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from llm_dyno.core.bench.client import BenchClient, StreamCancelled
from llm_dyno.core.bench.context import VERSION_DEADLINE_S
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.runtime.readiness import ReadinessProbe
from llm_dyno.core.telemetry.metrics import SCRAPE_DEADLINE_S
from tests.support.hostile_server import HostileServer

# A Python with the app, httpx and pydantic imported sits near 60-90 MB; a body read whole would be
# 500 MB and more. 200 MB keeps a wide margin on both sides.
PEAK_RSS_LIMIT_MB = 200


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    peak_mb: float
    seconds: float


def _hwm_mb(pid: int) -> float | None:
    """The process's own peak RSS so far (VmHWM: per address space, so it starts afresh at exec,
    unlike getrusage's maxrss, which keeps the forked parent's size)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def llm_dyno(args: list[str], home: Path, timeout_s: float = 60.0, home_env: Path | None = None) -> Ran:
    """``llm-dyno ARGS`` in a child process with ``LLM_DYNO_HOME`` at ``home_env`` (default ``home``,
    where its output is collected); its exit code, output, peak RSS (VmHWM, read every 20 ms until
    it exits) and wall time."""
    env = {**os.environ, "LLM_DYNO_HOME": str(home_env or home), "NO_COLOR": "1"}
    start = time.monotonic()
    peak = 0.0
    with open(home / "out.txt", "w+b") as out, open(home / "err.txt", "w+b") as err:
        proc = subprocess.Popen([sys.executable, "-m", "llm_dyno", *args], stdout=out, stderr=err, env=env)
        deadline = start + timeout_s
        while proc.poll() is None:
            peak = max(peak, _hwm_mb(proc.pid) or 0.0)
            if time.monotonic() > deadline:
                proc.kill()
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        return Ran(proc.returncode, out.read().decode(), err.read().decode(), peak, time.monotonic() - start)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path


SUITE_TIMEOUT_S = 4


def _suite(home: Path, timeout_s: int = SUITE_TIMEOUT_S) -> str:
    path = home / "tiny.yaml"
    path.write_text(
        f"""name: tiny
warmups: 0
runs: 3
timeout_s: {timeout_s}
prompts:
  - name: narrative
    max_tokens: 24
    messages:
      - role: user
        content: hi
"""
    )
    return str(path)


def _bench(server: HostileServer, home: Path, *extra: str) -> Ran:
    return llm_dyno(["bench", "--url", server.url, "--model", "tiny", "--suite", _suite(home), *extra], home)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("no_blank_lines", "the server sent a streaming event over 1 MiB at byte"),
        ("long_line", "the server sent a streaming line over 1 MiB at byte"),
        (
            "endless",
            "the server streamed more than 88 events without finishing (the request allows 24 tokens)",
        ),
        ("drip", "the stream did not finish within"),
        ("header_drip", "the stream did not start: /v1/chat/completions: no response headers within 4 s"),
        ("delta_string", "malformed stream chunk: 'delta' should be an object, got str \"hello\""),
        ("content_number", "malformed stream chunk: 'content' should be a string, got int 42"),
        ("chunk_list", "malformed stream chunk: a chunk should be a JSON object, got list [1, 2]"),
    ],
)
def test_bench_ends_the_bad_run_keeps_the_good_ones(shape: str, message: str, home: Path) -> None:
    with HostileServer(shape, good_posts=1, lifetime_s=40) as server:
        ran = _bench(server, home)
    assert ran.code == 1, ran.err
    assert f"error: run 2 of narrative failed: {message}" in ran.err
    assert "(1 completed runs kept)" in ran.out and "saved as #1" in ran.out
    # A dripping server uses up every deadline on the way: the version probe's, the /metrics scrape's and the
    # suite's own; the CLI's start and the good run get 10 s of margin on top.
    limit_s = VERSION_DEADLINE_S + SCRAPE_DEADLINE_S + SUITE_TIMEOUT_S + 10
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB and ran.seconds < limit_s, (ran.peak_mb, ran.seconds)
    shown = llm_dyno(["history", "show", "1", "--json"], home)
    assert shown.code == 0 and len(json.loads(shown.out)["prompts"][0]["runs"]) == 1


def test_bench_strips_escape_sequences_from_a_server_message(home: Path) -> None:
    with HostileServer("escapes", lifetime_s=30) as server:
        ran = _bench(server, home)
    assert ran.code == 1
    assert "server reported an error mid-stream: model overloaded" in ran.err
    assert "\x1b" not in ran.err + ran.out and "\x07" not in ran.err


@pytest.mark.parametrize("shape", ["big_metrics", "big_metrics_declared"])
def test_watch_refuses_a_500_mb_metrics_body_and_fails(shape: str, home: Path) -> None:
    with HostileServer(shape, lifetime_s=40) as server:
        ran = llm_dyno(["watch", "--url", server.url, "--count", "2", "--interval", "0.2"], home)
    assert ran.code == 1
    assert ran.out.count("unreachable: ") == 2
    assert "the /metrics answer is over 16 MiB; refused" in ran.out
    assert f"error: none of 2 samples of {server.url} succeeded" in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB and ran.seconds < 20, (ran.peak_mb, ran.seconds)


def test_watch_refuses_147k_series_under_the_size_cap_at_once(home: Path) -> None:
    with HostileServer("many_series", lifetime_s=40) as server:
        ran = llm_dyno(["watch", "--url", server.url, "--count", "3", "--interval", "0.2"], home)
    assert ran.code == 1
    assert "the /metrics answer has 147,000 samples of the series LLM Dyno reads, more than 10,000" in ran.out
    assert f"error: none of 3 samples of {server.url} succeeded" in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB and ran.seconds < 15, (ran.peak_mb, ran.seconds)


@pytest.mark.parametrize(
    ("shape", "message"),
    [("drip", "no complete answer within 5 s"), ("header_drip_get", "no response headers within 5 s")],
)
def test_watch_gives_up_on_a_dripping_metrics_answer(shape: str, message: str, home: Path) -> None:
    with HostileServer(shape, lifetime_s=40) as server:
        ran = llm_dyno(["watch", "--url", server.url, "--count", "1"], home)
    assert ran.code == 1
    assert message in ran.out
    assert ran.seconds < 20


@pytest.mark.parametrize("shape", ["big_metrics", "drip"])
def test_diagnose_says_live_metrics_unavailable(shape: str, home: Path) -> None:
    with HostileServer(shape, lifetime_s=40) as server:
        ran = llm_dyno(["diagnose", "--url", server.url], home)
    assert ran.code == 2, ran.err
    expected = "over 16 MiB; refused" if shape == "big_metrics" else "no complete answer within 5 s"
    assert f"error: {server.url}: live metrics unavailable: " in ran.err and expected in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB and ran.seconds < 25, (ran.peak_mb, ran.seconds)


@pytest.mark.parametrize("shape", ["silent", "header_drip"])  # after the headers, and before them
def test_cancel_ends_a_silent_stream_within_a_second(shape: str) -> None:
    cancel = threading.Event()
    with HostileServer(shape, lifetime_s=30) as server, BenchClient(url_endpoint(server.url, "")) as client:
        threading.Timer(0.5, cancel.set).start()
        start = time.monotonic()
        with pytest.raises(StreamCancelled):
            client.stream("/v1/chat/completions", {"max_tokens": 8}, cancel)
        assert time.monotonic() - start < 1.5  # 0.5 s until the cancel, then under a second


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("models_list", "/v1/models answered a list without a 'data' list, not an OpenAI model list"),
        ("models_string", "/v1/models answered a dict without a 'data' list, not an OpenAI model list"),
        ("drip", "no complete answer within 3 s"),
        ("header_drip_get", "no response headers within 3 s"),
    ],
)
def test_readiness_reports_a_malformed_models_answer_instead_of_dying(shape: str, message: str) -> None:
    with HostileServer(shape, lifetime_s=30) as server:
        result = ReadinessProbe(server.url, request_timeout_s=1.5).wait(timeout_s=10)
    assert not result.ready and message in result.error
