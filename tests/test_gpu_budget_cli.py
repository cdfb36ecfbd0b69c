"""Issue 31, GPUs per profile and a memory budget across running servers, through the CLI (a process
per command, as a user's shell runs them). The servers are stand-in ``vllm serve`` processes
(tests/support/standin_vllm.py) that record the ``CUDA_VISIBLE_DEVICES`` they were given; live GPU
memory comes from a real H200's recording replayed at the NVML boundary (tests/support/nvml_shim)
where a test needs it, else this machine has no NVIDIA driver and the budget is the records' alone.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.support.cli import cli
from tests.support.standin_vllm import write_standin
from tests.support.vllm_env import free_port

REPO = Path(__file__).resolve().parents[1]
SHIM = REPO / "tests" / "support" / "nvml_shim"
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"


class Rig:
    """A data folder with profiles of stand-in servers; stops what it launched at the end."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.home = tmp / "home"
        self.profiles = self.home / "config" / "profiles"
        self.profiles.mkdir(parents=True)
        self.exe = write_standin(tmp)
        self.env_file = tmp / "started.txt"
        self.env = {**os.environ, "STANDIN_ENV_FILE": str(self.env_file), **(env or {})}
        self.launched: list[str] = []

    def add(self, name: str, gpus: object, util: float | None) -> None:
        args = ["--port", str(free_port())] + (["--gpu-memory-utilization", str(util)] if util else [])
        profile = Profile(
            name=name,
            runtime=Runtime.PROCESS,
            process=ProcessSettings(executable=str(self.exe)),
            model="org/tiny",
            args=tuple(args),
            gpus=gpus,  # type: ignore[arg-type]
        )
        (self.profiles / f"{name}.yaml").write_text(profile.to_yaml())

    def run(self, *args: str) -> tuple[int, str, str]:
        done = cli(self.home, *args, env=self.env)
        if args[0] == "launch" and done.returncode == 0:
            self.launched.append(args[1])
        return done.returncode, done.stdout, done.stderr

    def plan_json(self, name: str) -> dict[str, object]:
        code, out, err = self.run("plan", name, "--json")
        assert code == 0, err
        budget = json.loads(out)["gpu_budget"]
        assert isinstance(budget, dict)
        return budget

    def stop_all(self) -> None:
        for name in self.launched:
            self.run("stop", name)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path)
    yield made
    made.stop_all()


def test_two_halves_fit_on_one_gpu_a_third_is_refused_naming_both(rig: Rig) -> None:
    for name in ("alpha", "beta", "gamma"):
        rig.add(name, [0], 0.5)
    assert rig.run("launch", "alpha")[0] == 0
    assert rig.run("launch", "beta")[0] == 0
    # each server was given GPU 0 and only it
    started = rig.env_file.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in started] == ["CUDA_VISIBLE_DEVICES=0"] * 2

    code, out, err = rig.run("launch", "gamma")
    assert code == 2, out + err
    assert "cannot launch 'gamma'" in err and "GPU 0" in err
    assert "'alpha' holds 0.50 of the GPU" in err and "'beta' holds 0.50 of the GPU" in err
    assert "stop or sleep 'alpha' or 'beta'" in err
    assert len(rig.env_file.read_text().splitlines()) == 2  # nothing started
    status = json.loads(rig.run("status", "--json")[1])
    assert sorted(r["profile"] for r in status if r["runtime"] == "process") == ["alpha", "beta"]

    # plan shows the budget: per GPU, each holder, this one, what is left (no NVML here: records only)
    budget = rig.plan_json("gamma")
    assert budget["fits"] is False
    (gpu0,) = budget["gpus"]  # type: ignore[union-attr]
    assert gpu0["live"] == "unknown" and gpu0["unit"] == "fraction"
    assert [(h["profile"], h["amount"]) for h in gpu0["held"]] == [("alpha", 0.5), ("beta", 0.5)]
    assert gpu0["this"]["amount"] == 0.5 and gpu0["free_after"] == pytest.approx(-0.5)
    code, text, _ = rig.run("plan", "gamma")
    assert code == 0 and "live memory unknown" in text and "'alpha' (" in text and "does not fit" in text

    # a stopped server frees its share
    assert rig.run("stop", "alpha")[0] == 0
    assert rig.plan_json("gamma")["fits"] is True
    code, out, err = rig.run("launch", "gamma")
    assert code == 0, out + err


def test_a_lower_share_is_suggested_and_fits(rig: Rig) -> None:
    rig.add("big", [0], 0.7)
    rig.add("greedy", [0], 0.5)
    rig.add("modest", [0], 0.3)
    assert rig.run("launch", "big")[0] == 0
    code, _, err = rig.run("launch", "greedy")
    assert code == 2 and "lower --gpu-memory-utilization of 'greedy' to 0.30 or less" in err
    assert rig.run("launch", "modest")[0] == 0


def test_servers_on_different_gpus_fit(rig: Rig) -> None:
    rig.add("left", [0], 0.9)
    rig.add("right", [1], 0.9)
    rig.add("both", [0, 1], 0.2)
    assert rig.run("launch", "left")[0] == 0
    assert rig.run("launch", "right")[0] == 0
    devices = sorted(line.split(" ", 1)[1] for line in rig.env_file.read_text().splitlines())
    assert devices == ["CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=1"]
    # one that spans both is refused on each GPU it would share
    code, _, err = rig.run("launch", "both")
    assert code == 2 and "GPU 0" in err and "GPU 1" in err and "'left'" in err and "'right'" in err


def test_gpu_indices_are_validated(rig: Rig) -> None:
    bad = rig.profiles / "twice.yaml"
    bad.write_text("name: twice\nruntime: process\nmodel: org/tiny\ngpus: [0, 0]\n")
    code, _, err = rig.run("plan", "twice")
    assert code == 2 and "GPU 0 is named twice" in err
    bad.write_text("name: twice\nruntime: process\nmodel: org/tiny\ngpus: [300]\n")
    code, _, err = rig.run("plan", "twice")
    assert code == 2 and "GPU index 300 is out of range" in err


def _recorded_use() -> tuple[int, int, int]:
    """(least used, most used, total) bytes of the recorded H200, as the shim replays it."""
    rows = [json.loads(line) for line in RECORDING.read_text().splitlines()]
    readings = [r["readings"][0] for r in rows if r.get("readings")]
    used = [int(r["mem_used_bytes"]) for r in readings]
    return min(used), max(used), int(readings[0]["mem_total_bytes"])


def test_live_use_that_leaves_too_little_is_refused_with_no_record(tmp_path: Path) -> None:
    least, most, total = _recorded_use()
    nvml_env = {
        "PYTHONPATH": os.pathsep.join([str(SHIM), str(REPO / "app")]),
        "LLM_DYNO_TEST_NVML": str(RECORDING),
    }
    rig = Rig(tmp_path, nvml_env)
    # a share more than the GPU less its least live use never fits; one within its most live use does
    too_much = round(1 - least / total + 0.002, 3)
    enough = int((1 - most / total) * 100) / 100
    assert too_much <= 1 and enough > 0.5
    rig.add("crowded", [0], too_much)
    rig.add("roomy", [0], enough)
    try:
        code, out, err = rig.run("launch", "crowded")
        assert code == 2, out + err
        assert "other programs hold" in err and "NVML" in err and "cannot launch 'crowded'" in err
        assert f"lower --gpu-memory-utilization of 'crowded' to {enough:.2f}" in err or "to 0.9" in err
        assert not rig.env_file.exists()  # nothing started
        budget = rig.plan_json("roomy")
        (gpu0,) = budget["gpus"]  # type: ignore[union-attr]
        assert gpu0["live"] == "NVML" and gpu0["total_bytes"] == total and gpu0["held"] == []
        assert least <= gpu0["live_used_bytes"] <= most and budget["fits"] is True
        assert gpu0["this"]["amount"] == int(total * enough)
        code, out, err = rig.run("launch", "roomy")
        assert code == 0, out + err
    finally:
        rig.stop_all()


def test_a_launch_onto_gpus_waits_for_the_one_checking_the_budget(rig: Rig) -> None:
    """Two launches at once cannot both count the same free memory: while another launch holds the
    machine's GPU budget lock (taken here, as that launch would take it), a launch waits and starts
    nothing; once it is released, the launch goes on."""
    rig.add("waiting", [0], 0.5)
    folder = rig.home / "data" / "servers"
    folder.mkdir(parents=True)
    lock = os.open(folder / "gpu-budget.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    env = {**rig.env, "LLM_DYNO_HOME": str(rig.home), "NO_COLOR": "1"}
    launch = subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", "launch", "waiting"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    rig.launched.append("waiting")
    try:
        time.sleep(4)  # the CLI has long imported and planned by now
        assert launch.poll() is None and not rig.env_file.exists()
    finally:
        os.close(lock)
    out, err = launch.communicate(timeout=60)
    assert launch.returncode == 0, out + err
    assert rig.env_file.read_text().count("CUDA_VISIBLE_DEVICES=0") == 1
