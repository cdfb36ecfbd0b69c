"""The smaller hostile cases of issue 12, each through its real entry point: the window's temp-file
cleanup, a name with a trailing newline, ``logs a`` next to ``a-b``, a symlinked profile on
``import --replace``, and a launch whose state cannot be written (full disk)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.test_hostile_files import SHIPPED, full_disk

__all__ = ["full_disk"]


def cli(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_window_deletes_only_its_own_temp_files(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "profiles"
    folder.mkdir(parents=True)
    mine = folder / ".cpu-demo.yaml.llm-dyno-k3j2h1.tmp"  # what a killed save of the app leaves
    theirs = [folder / ".notes.tmp", folder / ".vimrc.swp.tmp", folder / ".cpu-demo.yaml.abc123.tmp"]
    for path in (mine, *theirs):
        path.write_text("x")
    done = cli(tmp_path, "--screenshot", str(tmp_path / "shot.png"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert not mine.exists()
    assert all(p.exists() for p in theirs)


def test_a_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    done = cli(tmp_path, "profile", "import", str(SHIPPED), "--name", "demo\n")
    assert done.returncode == 2
    assert "name" in done.stderr and "a name of 1-80 letters" in done.stderr
    folder = tmp_path / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nl.yaml").write_text('schema: 1\nname: "nl\\n"\nmodel: m\nruntime: process\n')
    listed = cli(tmp_path, "profile", "list")
    assert "nl.yaml" in listed.stderr and "a name of 1-80 letters" in listed.stderr


def test_logs_of_a_are_not_those_of_a_b(tmp_path: Path) -> None:
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True)
    (logs / "a-20261201-101010.log").write_text("log of a\n")
    newer = logs / "a-b-20261201-101011.log"
    newer.write_text("log of a-b\n")
    os.utime(newer, (2_000_000_000, 2_000_000_000))
    done = cli(tmp_path, "logs", "a")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "log of a\n"
    assert cli(tmp_path, "logs", "a-b").stdout == "log of a-b\n"


def test_logs_strip_escape_sequences(tmp_path: Path) -> None:
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True)
    (logs / "esc-20261201-101010.log").write_bytes(b"\x1b]0;owned\x07INFO \x1b[31mready\x1b[0m\r\nnext\n")
    assert cli(tmp_path, "logs", "esc").stdout == "INFO ready\nnext\n"


def test_a_symlinked_profile_stays_a_symlink_on_import_replace(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "profiles"
    folder.mkdir(parents=True)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "cpu-demo.yaml"
    target.write_text(SHIPPED.read_text())
    link = folder / "cpu-demo.yaml"
    link.symlink_to(target)
    source = tmp_path / "new.yaml"
    source.write_text(SHIPPED.read_text().replace("--port", "--max-model-len\n  - '512'\n  - --port", 1))
    done = cli(tmp_path, "profile", "import", str(source), "--replace")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == target
    assert "'512'" in target.read_text() or "512" in target.read_text()


def test_a_launch_that_cannot_be_recorded_stops_its_server(full_disk: Path, tmp_path: Path) -> None:
    fake = tmp_path / "wt12-fake-vllm"
    fake.write_text("#!/bin/sh\nexec sleep 120\n")
    fake.chmod(0o755)
    folder = full_disk / "config" / "profiles"
    folder.mkdir(parents=True)
    process = ProcessSettings(executable=str(fake))
    profile = Profile(name="rec", runtime=Runtime.PROCESS, model="m", process=process)
    (folder / "rec.yaml").write_text(profile.to_yaml())
    (full_disk / "data" / "logs").mkdir(parents=True)
    with open(full_disk / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    done = cli(full_disk, "launch", "rec")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the server started but could not be recorded (no space left on the device of" in done.stderr
    assert "it was stopped rather than left running untracked [not_recorded]" in done.stderr
    running = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith("sleep 120")]
    assert not [p for p in running if str(fake) in _cmdline(p) or _parent_is(p, fake)]


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent_is(proc: Path, fake: Path) -> bool:
    try:
        return str(fake) in (proc / "environ").read_text(errors="replace")
    except OSError:
        return False
