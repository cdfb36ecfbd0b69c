"""Plan, launch and Diagnostics say the same thing about where a server listens, through the CLI:
a compose ``8020:8000`` is published on 127.0.0.1 (and the plan says so), ``0.0.0.0`` without a key
is reachable from the network and every one of the three warns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llm_dyno.core.profiles.model import DockerSettings, ProcessSettings, Profile, Runtime

OPEN_WARNING = "without an API key: anyone who can reach it can use the model"


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _save(home: Path, *profiles: Profile) -> None:
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    for p in profiles:
        (folder / f"{p.name}.yaml").write_text(p.to_yaml())


def test_plan_launch_and_diagnose_agree_on_where_it_listens(tmp_path: Path) -> None:
    compose = Profile(name="compose", model="m", docker=DockerSettings(image="i", ports=("8020:8000",)))
    wide = compose.with_changes(name="wide", docker=DockerSettings(image="i", ports=("0.0.0.0:8020:8000",)))
    process = Profile(
        name="proc",
        runtime=Runtime.PROCESS,
        model="m",
        args=("--host", "0.0.0.0", "--port", "8011"),  # noqa: S104
        process=ProcessSettings(executable="/nonexistent/wt12-vllm"),
    )
    _save(tmp_path, compose, wide, process)

    plan = cli(tmp_path, "plan", "compose")
    assert plan.returncode == 0, plan.stderr
    assert (
        "# listens on 127.0.0.1:8020 (loopback only: this machine alone can reach it); no API key"
        in plan.stdout
    )
    assert "# warning: port '8020:8000' is published on 127.0.0.1 only" in plan.stdout
    diag = cli(tmp_path, "diagnose", "compose")
    assert "reachable from the network" not in diag.stdout

    plan = cli(tmp_path, "plan", "wide")
    assert (
        "# listens on 0.0.0.0:8020 (every interface: reachable from the network); no API key" in plan.stdout
    )
    assert OPEN_WARNING in plan.stdout
    diag = cli(tmp_path, "diagnose", "wide")
    assert "Server reachable from the network without an API key" in diag.stdout
    assert "listens on = 0.0.0.0:8020" in diag.stdout

    plan = cli(tmp_path, "plan", "proc")
    assert (
        "# listens on 0.0.0.0:8011 (every interface: reachable from the network); no API key" in plan.stdout
    )
    launch = cli(tmp_path, "launch", "proc")  # fails (no such executable) after saying where it would listen
    assert launch.returncode == 1
    assert (
        "  listens on 0.0.0.0:8011 (every interface: reachable from the network); no API key" in launch.stderr
    )
    assert OPEN_WARNING in launch.stderr
    assert "Server reachable from the network without an API key" in cli(tmp_path, "diagnose", "proc").stdout
