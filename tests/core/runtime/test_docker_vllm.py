"""One real vLLM (CPU build) in a container, through the Docker backend: ready, answers, stops clean.

The image is ``llm-dyno-test/vllm-cpu`` (entrypoint ``vllm serve``, like vllm/vllm-openai) with the
vLLM venv and its Python bind-mounted read-only; the model is the tiny random one (tests/support).
About 30-60 s on 2 cores.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.errors
import httpx
import pytest

from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.runtime.base import ServerState
from llm_dyno.core.runtime.docker_backend import DockerRuntime
from tests.conftest_docker import free_port
from tests.support.images import VLLM_IMAGE, host_mounts

pytestmark = [pytest.mark.docker, pytest.mark.vllm]


@pytest.fixture(scope="module")
def model_dir(tiny_model: Path) -> Path:
    """The shared ``tiny_model`` (it fails, saying what to run, without the vllm-cpu venv)."""
    return tiny_model


def test_vllm_in_a_container_serves_and_stops(
    docker_client: Any, test_images: None, model_dir: Path, unique_name: Callable[[str], str], dyno_home: Any
) -> None:
    name = unique_name("vllm")
    profile = Profile(
        name=name,
        model=str(model_dir),
        args=(
            "--served-model-name",
            "tiny",
            "--host",
            "0.0.0.0",  # noqa: S104
            "--port",
            "8000",
            "--enforce-eager",
            "--dtype",
            "float32",
            "--max-model-len",
            "1024",
        ),
        docker=DockerSettings(
            image=VLLM_IMAGE,
            container_name=name,
            ports=(f"{free_port()}:8000",),
            volumes=(*host_mounts(), f"{model_dir}:{model_dir}:ro"),
            shm_size="1g",
        ),
    )
    runtime = DockerRuntime()
    handle = runtime.launch(runtime.plan(profile))
    states: list[ServerState] = []
    handle.subscribe(lambda s: states.append(s.state))
    try:
        status = handle.wait_ready(240)
        assert status.state is ServerState.READY, (status, handle.logs.lines(last=40))
        reply = httpx.post(
            handle.plan.base_url + "/v1/chat/completions",
            json={
                "model": "tiny",
                "messages": [{"role": "user", "content": "def quicksort"}],
                "max_tokens": 8,
            },
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["usage"]["completion_tokens"] > 0
        assert any("Application startup complete" in line for line in handle.logs.lines())
    finally:
        final = handle.stop(timeout=20)
    assert final.state is ServerState.STOPPED
    assert ServerState.STARTING in states and states[-1] is ServerState.STOPPED
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(name)
    assert handle.log_file is not None and handle.log_file.stat().st_size > 0
