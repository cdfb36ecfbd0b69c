"""Bounded work outside compose, through the real CLI in a subprocess with its peak RSS (VmHWM) and
wall time measured: a server log line of 128 MiB with no newline, launch logs of 1 MiB lines, a 50 MB
``docker run`` line, a 500 MB ``diagnose --log``, a /metrics of 147k series. Each ends promptly with
a clear message and bounded memory."""

from __future__ import annotations

import os
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


def test_import_refuses_a_50_mb_docker_run_line_at_once(tmp_path: Path) -> None:
    line = tmp_path / "run.sh"
    with open(line, "w") as fh:
        fh.write("docker run --gpus all vllm/vllm-openai:latest --model m")
        for _ in range(50 * 1024):
            fh.write(" --x " + "a" * 1019)
    ran = llm_dyno(["profile", "import", str(line)], tmp_path)
    assert ran.code != 0
    assert (
        f"{line}: the file to import is too big: {line.stat().st_size:,} bytes, more than 1,048,576"
        in ran.err
    )
    assert "Traceback" not in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB and ran.seconds < 20, f"{ran.peak_mb:.0f} MB, {ran.seconds:.1f} s"
    assert not (tmp_path / "config" / "profiles").exists()


def test_import_of_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "compose.yaml"
    os.mkfifo(fifo)
    ran = llm_dyno(["profile", "import", str(fifo)], tmp_path, timeout_s=30)
    assert ran.code != 0 and ran.seconds < 20
    assert f"{fifo}: cannot read the file to import: it is a FIFO, not a regular file" in ran.err


def test_diagnose_reads_the_head_and_tail_of_a_500_mb_log(tmp_path: Path) -> None:
    log = tmp_path / "huge.log"
    with open(log, "wb") as fh:
        fh.write(b"INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.32.0\n")
        fh.truncate(500 * MIB)  # a sparse middle: 500 MB of NUL bytes to read
        fh.seek(500 * MIB)
        fh.write(b"\nINFO 01-01 00:10:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s\n")
    profiles = tmp_path / "config" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "p.yaml").write_text(Profile(name="p", model="m", runtime=Runtime.PROCESS).to_yaml())
    ran = llm_dyno(["diagnose", "p", "--log", str(log)], tmp_path, timeout_s=120)
    assert ran.code == 0, ran.err[-2000:]
    assert "bytes in the middle not read" in ran.out + ran.err
    assert "Traceback" not in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB, f"peak RSS {ran.peak_mb:.0f} MB"
    assert ran.seconds < 60
