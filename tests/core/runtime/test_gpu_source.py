"""Which GPUs a server's dashboard watches, and whether it reads them locally or in the container.

Plans come from the real runtimes' pure ``plan()``; docker contexts are real context files written by
docker-py into a temporary DOCKER_CONFIG. No engine is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docker.context import ContextAPI

from llm_dyno.core.profiles.model import DockerSettings, Profile, profile_from_yaml
from llm_dyno.core.runtime.docker_backend import DockerRuntime
from llm_dyno.core.runtime.docker_spec import remote_engine_host
from llm_dyno.core.runtime.gpu_source import GpuSource, attached_gpu_source, plan_gpu_source, plan_gpus
from llm_dyno.core.runtime.process_backend import ProcessRuntime
from llm_dyno.core.telemetry.attach import AttachedServer
from tests.support.model_folders import demo_model_folder_made

SHIPPED = Path(__file__).resolve().parents[3] / "profiles"


@pytest.fixture(autouse=True)
def docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty docker CLI config (default context) and no DOCKER_HOST / DOCKER_CONTEXT."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "config.json").write_text("{}")
    return tmp_path / "docker"


def docker_profile(host: str | None = None, **changes: Any) -> Profile:
    settings = DockerSettings(image="vllm/vllm-openai:v0.11.0", host=host, ports=("0.0.0.0:8000:8000",))
    return Profile(name="qwen tp2", model="Qwen/Qwen3-8B", docker=settings, **changes)


def process_profile(**changes: Any) -> Profile:
    return Profile(name="local", model="tiny", runtime="process", **changes)


def test_listed_gpus_are_watched_on_this_machine() -> None:
    cases = [
        (ProcessRuntime(), process_profile(gpus=(1, 2))),
        (DockerRuntime(), docker_profile(gpus=(1, 2))),
        (DockerRuntime(), docker_profile("unix:///var/run/docker.sock", gpus="1,2")),
    ]
    for runtime, profile in cases:
        source = plan_gpu_source(runtime.plan(profile))
        assert source == GpuSource((1, 2), (1, 2)) and not source.through_container
        assert source.label == "GPU 1+2" and source.where == "this machine"


def test_all_means_the_gpus_tensor_parallelism_uses() -> None:
    tp2 = docker_profile(gpus="all", args=("--tensor-parallel-size", "2"))
    assert plan_gpus(DockerRuntime().plan(tp2)) == (0, 1)
    assert plan_gpus(DockerRuntime().plan(docker_profile(gpus="all"))) == (0,)
    assert plan_gpus(ProcessRuntime().plan(process_profile(gpus="all", args=("-tp", "4")))) == (0, 1, 2, 3)


def test_no_gpu_no_source() -> None:
    demo = profile_from_yaml((SHIPPED / "cpu-demo.yaml").read_text())
    assert demo.gpus is None
    with demo_model_folder_made():  # as after the demo setup
        assert plan_gpu_source(ProcessRuntime().plan(demo)) is None
    assert plan_gpu_source(DockerRuntime().plan(docker_profile())) is None


@pytest.mark.parametrize(
    ("host", "machine"),
    [("tcp://gpu-box:2376", "gpu-box"), ("ssh://me@gpu-box", "gpu-box"), ("ssh://me@10.0.0.7:22", "10.0.0.7"),
     ("tcp://localhost:2375", None), ("ssh://me@127.0.0.1", None), ("unix:///var/run/docker.sock", None)],
)  # fmt: skip
def test_remote_engine_host(host: str, machine: str | None) -> None:
    assert remote_engine_host(host) == machine
    assert remote_engine_host(None, {"DOCKER_HOST": host}) == machine  # the engine from_env() picks


def test_docker_contexts_are_looked_up() -> None:
    ContextAPI.create_context("gpu-box", host="ssh://me@gpu-box")
    ContextAPI.create_context("here", host="unix:///run/user/1000/docker.sock")
    assert remote_engine_host("gpu-box") == "gpu-box"
    assert remote_engine_host("here") is None
    assert remote_engine_host("no-such-context") is None  # the launch says it does not exist
    assert remote_engine_host(None) is None  # the default context: this machine's socket
    assert remote_engine_host(None, {"DOCKER_CONTEXT": "gpu-box"}) == "gpu-box"
    ContextAPI.set_current_context("gpu-box")  # `docker context use gpu-box`
    assert remote_engine_host(None) == "gpu-box"
    assert remote_engine_host(None, {"DOCKER_HOST": "unix:///var/run/docker.sock"}) is None


def test_remote_host_reads_through_the_container() -> None:
    plan = DockerRuntime().plan(docker_profile("ssh://me@gpu-box", gpus=(1, 2)))
    source = plan_gpu_source(plan)
    assert source is not None and source.through_container
    # inside the container the two GPUs are its 0 and 1: all of them, under the profile's names
    assert (source.gpus, source.label) == (None, "GPU 1+2")
    assert source.container == "llm-dyno-qwen-tp2"  # the profile's container, where nvidia-smi runs
    assert (source.docker_host, source.machine) == ("ssh://me@gpu-box", "gpu-box")
    assert source.where == "container llm-dyno-qwen-tp2 on gpu-box"
    every = docker_profile("tcp://gpu-box:2376", gpus="all", args=("--tensor-parallel-size", "2"))
    every = every.with_changes(docker=every.docker.model_copy(update={"container_name": "vllm"}))
    source = plan_gpu_source(DockerRuntime().plan(every))
    assert source == GpuSource((0, 1), (0, 1), "vllm", "tcp://gpu-box:2376", "gpu-box")


def test_process_runtime_is_always_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "ssh://me@gpu-box")
    assert plan_gpu_source(ProcessRuntime().plan(process_profile(gpus=(0,)))) == GpuSource.local((0,))
    docker = plan_gpu_source(DockerRuntime().plan(docker_profile(gpus=(0,))))
    assert docker is not None and docker.machine == "gpu-box"  # no docker.host: DOCKER_HOST decides


def test_attached_server() -> None:
    plain = AttachedServer("http://gpu-box:8000", gpu_index=1)
    assert attached_gpu_source(plain, nvml_reason=None) == GpuSource.local((1,))
    assert attached_gpu_source(plain, nvml_reason="NVIDIA driver not found") == GpuSource.local((1,))
    named = AttachedServer("http://gpu-box:8000", container="vllm-qwen", gpu_index=0)
    assert attached_gpu_source(named, nvml_reason=None) == GpuSource.local((0,))
    through = GpuSource((0,), (0,), "vllm-qwen")
    assert attached_gpu_source(named, nvml_reason="NVIDIA driver not found") == through
    ticked = AttachedServer("http://gpu-box:8000", container="vllm-qwen", gpu_index=0, gpu_via_container=True)
    assert attached_gpu_source(ticked, nvml_reason=None) == through
    no_index = AttachedServer("http://gpu-box:8000", container="vllm-qwen", gpu_via_container=True)
    assert attached_gpu_source(no_index, nvml_reason=None) is None
