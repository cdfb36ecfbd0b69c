"""The server commands through the real CLI (a new process per command), against a real vLLM (CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from tests.support import vllm_env

pytestmark = pytest.mark.vllm
NAME = "tiny-cli"


def cli(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home)}
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def process_rows(status_json: str) -> list[dict[str, object]]:
    """``status --json`` rows of process servers (this test's); the Docker engine is shared by everyone."""
    return [r for r in json.loads(status_json) if r["runtime"] == "process"]


@pytest.fixture(scope="module")
def home(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("cli-home")
    profile = Profile(
        name=NAME,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        args=(*vllm_env.FAST_ARGS, "--served-model-name", "tiny", "--port", str(vllm_env.free_port())),
        env=vllm_env.server_env(vllm_cache),
    )
    profiles = folder / "config" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / f"{NAME}.yaml").write_text(profile.to_yaml())
    yield folder
    cli(folder, "stop", NAME)  # in case a test failed half-way


def test_plan_shows_the_command_without_running_it(home: Path, vllm_exe: Path) -> None:
    done = cli(home, "plan", NAME)
    assert done.returncode == 0, done.stderr
    assert f"{vllm_exe} serve" in done.stdout and "--host 127.0.0.1" in done.stdout
    assert "VLLM_CPU_KVCACHE_SPACE=1" in done.stdout
    assert not (home / "data" / "servers").exists()


def test_status_with_nothing_running(home: Path) -> None:
    done = cli(home, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert process_rows(done.stdout) == []


def test_launch_wait_status_logs_stop(home: Path) -> None:
    done = cli(home, "launch", NAME, "--wait", "--timeout", "180", timeout=200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ready: http://127.0.0.1:" in done.stdout
    assert "loading_weights" in done.stderr  # progress was shown on the way

    # The server outlived the CLI process that launched it; a new one finds it.
    done = cli(home, "status", "--json")
    # Docker containers of other llm-dyno users on this engine are listed too: look at ours
    rows = process_rows(done.stdout)
    assert [(r["profile"], r["runtime"], r["state"]) for r in rows] == [(NAME, "process", "ready")]
    assert rows[0]["url"].startswith("http://127.0.0.1:") and rows[0]["since"]
    pid = rows[0]["pid"]

    again = cli(home, "launch", NAME)
    assert again.returncode != 0 and "already running" in again.stderr

    done = cli(home, "logs", NAME)
    assert done.returncode == 0 and "Application startup complete." in done.stdout

    done = cli(home, "stop", NAME)
    assert done.returncode == 0, done.stderr
    assert "stopped" in done.stdout
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert process_rows(cli(home, "status", "--json").stdout) == []
    assert cli(home, "logs", NAME).returncode == 0  # the last run's log stays readable
    assert cli(home, "stop", NAME).returncode != 0


def test_launch_failure_prints_reason_hint_and_excerpt(home: Path) -> None:
    store = ProfileStore(home / "config" / "profiles")
    good = store.get(NAME)
    store.save(good.with_changes(name="bad-cli", args=(*good.args, "--no-such-flag")))
    done = cli(home, "launch", "bad-cli", "--wait", "--timeout", "120", timeout=150)
    assert done.returncode == 1
    assert "unrecognized_arguments" in done.stderr and "--no-such-flag" in done.stderr
    assert "→" in done.stderr and "| vllm: error: unrecognized arguments: --no-such-flag" in done.stderr
