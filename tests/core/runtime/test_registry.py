"""The registry of running servers across processes: keys that cannot collide, one launch at a time,
stops from anywhere, Docker containers adopted from their snapshot (one bad container breaks nothing).

The process tests launch a stand-in server (a script that only sleeps: what is tested is the registry,
not vLLM; the real vLLM runs in tests/test_jobs_end_to_end.py) through ``llm-dyno`` in subprocesses, as
two terminals would. The Docker test launches the tiny image on the real engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.base import ServerState
from llm_dyno.core.runtime.docker_common import LABEL_MANAGED, LABEL_PROFILE, LABEL_SNAPSHOT
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.runtime.registry_files import ProcessRecord, server_key, state_path
from tests.support.images import TINY_IMAGE, host_mounts

SLEEPER = "#!{python}\nimport time\nprint('serving (stand-in)', flush=True)\ntime.sleep(120)\n"


def cli(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = cli(home, *args)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    monkeypatch.setenv("LLM_DYNO_HOME", str(folder))
    exe = tmp_path / "vllm"
    exe.write_text(SLEEPER.replace("{python}", sys.executable))
    exe.chmod(0o755)
    model = tmp_path / "model"  # the stand-in never reads it, but a process profile's folder must exist
    model.mkdir()
    store = ProfileStore()
    for name, port in (("A", 18931), ("a", 18932)):
        store.save(
            Profile(
                name=name,
                runtime=Runtime.PROCESS,
                process=ProcessSettings(executable=str(exe)),
                model=str(model),
                args=("--port", str(port)),
            )
        )
    return folder


def test_keys_do_not_collide() -> None:
    names = ["A", "a", "a b", "a-b", "a_b", "A/B"]
    assert len({server_key(n) for n in names}) == len(names)
    assert len({state_path(n) for n in names}) == len(names)


def test_two_launches_at_once_one_is_refused_and_a_and_A_are_two_servers(home: Path) -> None:
    first, second = cli(home, "launch", "a"), cli(home, "launch", "a")
    results = [(*p.communicate(timeout=60), p.returncode) for p in (first, second)]
    try:
        codes = sorted(code for _out, _err, code in results)
        assert codes == [0, 2], results
        refused = next(err for _out, err, code in results if code == 2)
        assert "already running" in refused or "being launched by another llm-dyno" in refused
        assert run(home, "launch", "A").returncode == 0  # another profile, its own record
        rows = json.loads(run(home, "status", "--json").stdout)
        mine = sorted((r["profile"], r["state"]) for r in rows if r["runtime"] == "process")
        assert [p for p, _ in mine] == ["A", "a"]
        assert len(list((home / "data" / "servers").glob("*.json"))) == 2
    finally:
        for name in ("a", "A"):
            run(home, "stop", name)
    assert [r for r in json.loads(run(home, "status", "--json").stdout) if r["runtime"] == "process"] == []


def test_a_stop_from_another_process_shows_as_stopped(home: Path) -> None:
    manager = ServerManager()
    handle = manager.launch(ProfileStore().get("a"))
    try:
        assert handle.status.state.is_live
        done = run(home, "stop", "a")
        assert done.returncode == 0, done.stderr
        status = handle.wait_done(15)
        assert status.state is ServerState.STOPPED, status
        assert status.detail == "stopped by another llm-dyno"
    finally:
        handle.stop(5)


def test_damaged_records_beside_a_live_server_are_skipped(home: Path) -> None:
    """Records a crash, another version or a hostile user could leave: ``status`` lists the live
    server (its record typed, written by the launch) and passes over the rest without failing."""
    assert run(home, "launch", "a").returncode == 0
    try:
        folder = home / "data" / "servers"
        (record_path,) = folder.glob("*.json")
        record = ProcessRecord.from_json(record_path.read_text())
        assert record.profile_name == "a" and record.pgid == record.pid and record.start_ticks is not None
        assert record.argv[-4:] == ("--port", "18932", "--host", "127.0.0.1")
        assert record.profile["name"] == "a"
        good = json.loads(record_path.read_text())
        for name, text in {
            "not-json": "{",
            "a-list": "[1, 2]",
            "pid-text": json.dumps({**good, "pid": "twelve"}),
            "no-argv": json.dumps({k: v for k, v in good.items() if k != "argv"}),
            "argv-number": json.dumps({**good, "argv": 5}),
            "bad-profile": json.dumps({**good, "profile": {"name": 3}}),
            "docker": json.dumps({**good, "runtime": "docker"}),
        }.items():
            (folder / f"{name}.json").write_text(text)
        done = run(home, "status", "--json")
        assert done.returncode == 0, done.stderr
        rows = [r for r in json.loads(done.stdout) if r["runtime"] == "process"]
        assert [r["profile"] for r in rows] == ["a"] and rows[0]["state"] not in ("stopped", "failed")
    finally:
        run(home, "stop", "a")
    assert not record_path.exists()


@pytest.mark.docker
def test_docker_adoption_reads_the_snapshot_and_skips_what_it_cannot_follow(
    docker_client: Any,
    tiny_profile: Callable[..., Profile],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-only-in-this-test")
    profile = tiny_profile("keyed", args=("--api-key", "${VLLM_API_KEY}"))
    launched = ServerManager().launch(profile)
    broken: list[Any] = []
    try:
        for stem, labels in (
            ("no-snapshot", {LABEL_MANAGED: "1", LABEL_PROFILE: unique_name("ghost")}),
            ("bad-snapshot", {LABEL_MANAGED: "1", LABEL_PROFILE: "x", LABEL_SNAPSHOT: "{not json"}),
        ):
            broken.append(
                docker_client.containers.run(
                    TINY_IMAGE,
                    name=unique_name(stem),
                    detach=True,
                    init=True,
                    labels=labels,
                    volumes=list(host_mounts(with_vllm=False)),
                )
            )
        assert launched.wait_ready(30).state is ServerState.READY
        # another process (a CLI, a restarted window): it knows only what the engine says
        other = ServerManager()
        other.adopt_all()
        adopted = other.get(profile.name)
        assert adopted is not None and adopted.profile_name == profile.name
        assert adopted.plan.profile == profile  # the launched snapshot, not a rebuild of its command
        names = " ".join(other.warnings)
        for container in broken:
            assert f"container {container.name}: cannot be followed" in names
        assert adopted.wait_ready(15).state is ServerState.READY
        assert adopted.stop(timeout=10).state is ServerState.STOPPED
        status = launched.wait_done(15)
        assert status.state is ServerState.STOPPED and "stopped by another llm-dyno" in status.detail
    finally:
        for container in broken:
            container.remove(force=True)
        launched.stop(timeout=5)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and launched.status.state.is_live:
            time.sleep(0.1)
