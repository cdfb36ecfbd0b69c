"""``llm-dyno status`` signals no process it did not start: a registry record whose server pid is dead
but whose process group is alive and someone else's (a stale record after pid reuse, or one written by
hand) leaves that group alone; the record itself is dropped. Through the real CLI in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.runtime.process_groups import group_members, proc_start_ticks


def cli(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def orphan_group() -> Iterator[tuple[int, int]]:
    """A live process group that is not a server's: its leader (a shell) has exited, a ``sleep`` it
    started lives on in the group. Yields (pgid = the dead leader's pid, the sleep's pid)."""
    leader = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out, _ = leader.communicate(timeout=10)  # reaped: the leader's pid is free, its group lives on
    sleeper = int(out.strip())
    assert group_members(leader.pid) == [sleeper]
    yield leader.pid, sleeper
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader.pid, 9)


def _record(home: Path, pgid: int, start_ticks: int | None, marker: str, argv: list[str]) -> Path:
    folder = home / "data" / "servers"
    folder.mkdir(parents=True, exist_ok=True)
    profile = Profile(name="ghost", model="m", runtime=Runtime.PROCESS, process=ProcessSettings())
    path = folder / "ghost-0123456789.json"
    path.write_text(
        json.dumps(
            {
                "pid": pgid,
                "pgid": pgid,
                "start_ticks": start_ticks,
                "started_at": time.time() - 60,
                "argv": argv,
                "url": "http://127.0.0.1:9",
                "host_port": 9,
                "log_path": str(home / "data" / "logs" / "ghost.log"),
                "profile_name": "ghost",
                "profile_hash": "x",
                "profile": profile.to_dict(),
                "runtime": "process",
                "marker": marker,
            }
        )
    )
    return path


@pytest.mark.parametrize(
    "shape",
    [
        "no start time",  # an older or hand-written record
        "start time before the group",  # what a stale record after a reboot looks like
        "the sleeper's own start time and argv, no marker",
        "the sleeper's own start time and argv, a marker it does not carry",
    ],
)
def test_status_never_signals_a_group_it_did_not_start(
    shape: str, orphan_group: tuple[int, int], tmp_path: Path
) -> None:
    pgid, sleeper = orphan_group
    own_ticks = proc_start_ticks(sleeper)
    argv = ["/usr/bin/sleep", "120"]
    ticks, marker = {
        "no start time": (None, ""),
        "start time before the group": (0, ""),
        "the sleeper's own start time and argv, no marker": (own_ticks, ""),
        "the sleeper's own start time and argv, a marker it does not carry": (own_ticks, "f" * 32),
    }[shape]
    record = _record(tmp_path, pgid, ticks, marker, argv)
    for args in (["status"], ["status", "--json"]):
        done = cli(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert proc_start_ticks(sleeper) == own_ticks, f"{args}: the unrelated process was signalled"
        assert group_members(pgid) == [sleeper]
        assert "ghost" not in done.stdout  # not adopted: its server is gone
        assert not record.exists()  # the stale record is dropped
        record = _record(tmp_path, pgid, ticks, marker, argv)


# ---- the app's folders: never written through a symlink ------------------------------------------


def _fake_server_profile(home: Path, name: str) -> Profile:
    fake = home / "fake-vllm"
    fake.write_text("#!/bin/sh\nexec sleep 120\n")
    fake.chmod(0o755)
    profile = Profile(
        name=name, runtime=Runtime.PROCESS, model="m", process=ProcessSettings(executable=str(fake))
    )
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(profile.to_yaml())
    return profile


def test_launch_refuses_a_symlinked_server_record_and_leaves_its_target_alone(tmp_path: Path) -> None:
    from llm_dyno.core.runtime.registry_files import server_key

    _fake_server_profile(tmp_path, "linked")
    servers = tmp_path / "data" / "servers"
    servers.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    record = servers / f"{server_key('linked')}.json"
    record.symlink_to(victim)
    done = cli(tmp_path, "launch", "linked")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"{record} is a symbolic link: LLM Dyno does not write through links in its data folder"
        in done.stderr
    )
    assert "remove the link and try again" in done.stderr and "Traceback" not in done.stderr
    assert victim.read_text() == "precious\n" and record.is_symlink()
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p, tmp_path / "fake-vllm")]
    # a dangling link is refused the same way, and nothing is created where it points
    record.unlink()
    record.symlink_to(tmp_path / "made-through-the-link")
    done = cli(tmp_path, "launch", "linked")
    assert done.returncode == 1 and "is a symbolic link" in done.stderr
    assert not (tmp_path / "made-through-the-link").exists()


def test_the_launch_lock_is_not_taken_through_a_link(tmp_path: Path) -> None:
    from llm_dyno.core.runtime.registry_files import server_key

    _fake_server_profile(tmp_path, "locked")
    servers = tmp_path / "data" / "servers"
    servers.mkdir(parents=True)
    lock = servers / f"{server_key('locked')}.lock"
    lock.symlink_to(tmp_path / "lock-target")
    done = cli(tmp_path, "launch", "locked")
    assert done.returncode != 0, done.stdout + done.stderr
    assert f"{lock} is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "lock-target").exists()


def _runs(proc: Path, exe: Path) -> bool:
    try:
        return str(exe) in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def test_history_refuses_a_symlinked_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    victim = tmp_path / "victim.db"
    victim.write_bytes(b"not a database of ours")
    (data / "history.db").symlink_to(victim)
    done = cli(tmp_path, "history", "list")
    assert done.returncode != 0
    assert f"{data / 'history.db'} is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert victim.read_bytes() == b"not a database of ours"
    assert not (tmp_path / "victim.db-wal").exists()
