"""Streamed engine answers bounded (issue 29, class 9, the streams): a container's log followed, an
exec's output (a lifecycle hook, nvidia-smi in a remote container) and a pull's progress, from a fake
engine made here (tests/support/stream_engine.py) that sends one endless line (a frame claiming 4 GiB)
or drips a byte a second. The memory held stays bounded, whatever was sent; what must end ends by its
deadline with a message naming the stream."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
import pytest

from llm_dyno.core.profiles.model import ExecHook
from llm_dyno.core.runtime.docker_bounds import EngineAnswerRefused
from llm_dyno.core.runtime.docker_hooks import HookFailed, run_hooks
from llm_dyno.core.runtime.lines import MAX_LINE_CHARS
from llm_dyno.core.runtime.remote_gpu import ContainerGpuSampler
from llm_dyno.core.runtime.stream_bounds import EXEC_DEADLINE_S, pull_lines
from tests.support.stream_engine import StreamEngine
from tests.test_round3_adoption import _home, _labels

ENGINE = "FAKE:ENGINE:B"
SENT = 400 * 1024 * 1024  # what the endless log sends: far more than the bound on what is held
RSS_BOUND_KB = 300 * 1024


def _rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1])


def test_logs_follow_of_an_endless_line_holds_bounded_memory(tmp_path: Path) -> None:
    home = _home(tmp_path, None)
    containers = {"own": _labels(9, None, ENGINE)}
    with StreamEngine("endless-line", containers=containers, engine_id=ENGINE, endless_bytes=SENT) as engine:
        env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1", "DOCKER_HOST": engine.url}
        env.update({"VLLM_API_KEY": "sk-own-77c1"})  # the profile's key, as at its launch
        env.pop("DOCKER_CONTEXT", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "llm_dyno", "logs", "own", "--follow"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        peak = 0
        out: list[bytes] = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else b""))
        reader.start()
        ends = time.monotonic() + 150
        while proc.poll() is None and time.monotonic() < ends:
            peak = max(peak, _rss_kb(proc.pid))
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        err = proc.stderr.read().decode() if proc.stderr else ""
        reader.join(10)
        sent = engine.sent
    text = b"".join(out).decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert sent >= SENT, f"the engine sent only {sent:,} bytes: the log was not followed ({err})"
    assert peak < RSS_BOUND_KB, f"{peak / 1024:.0f} MB held while following a {SENT >> 20} MiB line"
    # the line as kept: cut at MAX_LINE_CHARS and marked (the terminal is shown its first part and
    # its length); nothing else arrived, so it is the one line
    kept = [int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+) characters in all\)", text)]
    assert len(kept) == 1 and MAX_LINE_CHARS < kept[0] <= MAX_LINE_CHARS + 200, (kept, text[-300:])
    saved = list(home.rglob("own-*.log"))  # the log kept when the container was gone, as it was sent
    assert len(saved) == 1 and saved[0].read_bytes() == b"saved\n", saved


@pytest.mark.parametrize("shape", ["endless-line", "drip"])
def test_a_gpu_reading_through_exec_ends_by_its_bound(shape: str) -> None:
    with StreamEngine(shape, containers={"gpu-box": {}}, engine_id=ENGINE) as engine:
        sampler = ContainerGpuSampler(lambda _s: None, container="gpu-box", host=engine.url, gpus=(0,))
        started = time.monotonic()
        sample = sampler.read_now()
        took = time.monotonic() - started
        sampler.stop()
    assert sample.error is not None and "nvidia-smi in container gpu-box" in sample.error, sample
    expected = (
        "more than 4 MiB arrived" if shape == "endless-line" else f"not finished within {EXEC_DEADLINE_S:g} s"
    )
    assert expected in sample.error, sample.error
    assert took < EXEC_DEADLINE_S + 5, took


@pytest.mark.parametrize("shape", ["endless-line", "drip"])
def test_a_hook_whose_output_never_ends_fails_at_its_deadline(shape: str) -> None:
    lines: list[str] = []
    with StreamEngine(shape, containers={"own": {}}, engine_id=ENGINE) as engine:
        client = docker.DockerClient(base_url=engine.url)
        started = time.monotonic()
        with pytest.raises(HookFailed) as failed:
            run_hooks(
                client.api, "own", [ExecHook(command=("sh", "-c", "yes"))], "post_start", lines.append, 3.0
            )
        took = time.monotonic() - started
        client.close()
    message = failed.value.message
    assert "post_start hook" in message, message
    assert "within 3 s" in message or "post_start hook output: more than 64 MiB arrived" in message, message
    assert took < 3.0 + 3, took
    assert all(len(line) <= MAX_LINE_CHARS + 200 for line in lines)


def test_a_dripping_pull_ends_when_the_launch_is_stopped() -> None:
    with StreamEngine("drip", engine_id=ENGINE, drip_s=0.2) as engine:
        client = docker.DockerClient(base_url=engine.url)
        stop = threading.Event()
        threading.Timer(1.0, stop.set).start()
        started = time.monotonic()
        lines = list(pull_lines(client.api, "tiny", "latest", cancel=stop))
        took = time.monotonic() - started
        client.close()
    assert took < 3.0, took
    assert all(set(line) == {"x"} for line in lines), lines  # the bytes dripped so far, nothing else


def test_an_endless_pull_event_is_cut_off_at_the_size_cap() -> None:
    with StreamEngine("endless-line", engine_id=ENGINE) as engine:
        client = docker.DockerClient(base_url=engine.url)
        with pytest.raises(EngineAnswerRefused) as refused:
            for _line in pull_lines(client.api, "tiny", "latest"):
                pass
        client.close()
    assert "pull of tiny:latest: more than 256 MiB arrived" in refused.value.message


def test_status_ends_while_the_log_of_a_container_it_adopts_drips(tmp_path: Path) -> None:
    home = _home(tmp_path, None)
    containers = {"own": _labels(9, None, ENGINE)}
    with StreamEngine("drip", containers=containers, engine_id=ENGINE, drip_s=0.5) as engine:
        env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1", "DOCKER_HOST": engine.url}
        env.update({"VLLM_API_KEY": "sk-own-77c1"})
        env.pop("DOCKER_CONTEXT", None)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "llm_dyno", "status", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        took = time.monotonic() - started
        asked = list(engine.requests)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert any("/logs" in p for p in asked), asked  # the log was being followed while status ended
    assert '"profile": "own"' in done.stdout, done.stdout
    assert took < 30, took
