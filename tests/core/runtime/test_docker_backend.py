"""The Docker backend against a real engine, with the tiny image's fake `vllm serve` (starts in <1 s).

Needs dockerd (scripts/start-dockerd); images are built offline (tests/support/images.py); pulls are tested
against a local registry in test_docker_pull.py.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import docker.errors
import pytest

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import FailureKind, ServerState
from llm_dyno.core.runtime.docker_backend import DockerRuntime, DockerServerHandle
from tests.support.images import ABSENT_IMAGE, TINY_IMAGE, host_mounts

pytestmark = pytest.mark.docker

OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity"
)


def gone(client: Any, name_or_id: str) -> bool:
    try:
        client.containers.get(name_or_id)
    except docker.errors.NotFound:
        return True
    return False


def launch(profile: Profile) -> DockerServerHandle:
    runtime = DockerRuntime()
    return runtime.launch(runtime.plan(profile))


def test_lifecycle_start_ready_stop_removes_container(
    docker_client: Any, tiny_profile: Callable[..., Profile], dyno_home: Any
) -> None:
    profile = tiny_profile()
    handle = launch(profile)
    seen: list[ServerState] = []
    handle.subscribe(lambda s: seen.append(s.state))
    try:
        status = handle.wait_ready(30)
        assert status.state is ServerState.READY, status
        container = docker_client.containers.get(handle.container_id)
        assert container.labels["llm-dyno.managed"] == "1"
        assert container.labels["llm-dyno.profile"] == profile.name
        assert container.attrs["HostConfig"]["Init"] is True
        assert any("Application startup complete." in line for line in handle.logs.lines())
    finally:
        final = handle.stop(timeout=10)
    assert final.state is ServerState.STOPPED
    assert seen[-2:] == [ServerState.STOPPING, ServerState.STOPPED]
    assert handle.exit_code == 0  # the fake server exits cleanly on SIGTERM (forwarded by --init)
    assert gone(docker_client, profile.name)
    assert handle.log_file is not None and handle.log_file.is_relative_to(dyno_home / "data" / "logs")
    assert "Application startup complete." in handle.log_file.read_text()
    assert handle.stop().state is ServerState.STOPPED  # idempotent


def test_container_that_exits_fails_with_code_and_reason(
    docker_client: Any, tiny_profile: Callable[..., Profile]
) -> None:
    profile = tiny_profile(args=("--emit", OOM_LINE, "--exit-code", "3"))
    handle = launch(profile)
    status = handle.wait_done(30)
    assert status.state is ServerState.FAILED
    assert status.failure is not None
    assert status.failure.exit_code == 3 and handle.exit_code == 3
    assert status.failure.kind is FailureKind.CUDA_OOM, status.failure
    assert gone(docker_client, profile.name)
    assert handle.log_file is not None and OOM_LINE in handle.log_file.read_text()


def test_gpu_request_without_nvidia_runtime(docker_client: Any, tiny_profile: Callable[..., Profile]) -> None:
    if "nvidia" in (docker_client.info().get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime")
    profile = tiny_profile(gpus="all")
    status = launch(profile).wait_done(30)
    assert status.state is ServerState.FAILED and status.failure is not None
    assert status.failure.kind is FailureKind.NVIDIA_RUNTIME_MISSING, status.failure
    assert "nvidia-container-toolkit" in status.failure.hint
    assert gone(docker_client, profile.name)  # docker leaves the created container: we remove it


def test_taken_port(docker_client: Any, tiny_profile: Callable[..., Profile]) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        profile = tiny_profile(port=port)
        status = launch(profile).wait_done(30)
    assert status.state is ServerState.FAILED and status.failure is not None
    assert status.failure.kind is FailureKind.PORT_IN_USE, status.failure
    assert str(port) in status.failure.summary
    assert gone(docker_client, profile.name)


def test_missing_image_cannot_be_pulled(docker_client: Any, tiny_profile: Callable[..., Profile]) -> None:
    profile = tiny_profile(image=ABSENT_IMAGE)
    handle = launch(profile)
    states: list[ServerState] = []
    handle.subscribe(lambda s: states.append(s.state))
    status = handle.wait_done(60)
    assert status.state is ServerState.FAILED and status.failure is not None
    assert status.failure.kind is FailureKind.IMAGE_NOT_FOUND, status.failure
    assert ABSENT_IMAGE in status.failure.summary and "docker load" in status.failure.hint
    assert gone(docker_client, profile.name)


def test_name_taken_by_a_container_we_did_not_create(
    docker_client: Any, unique_name: Callable[[str], str], tiny_profile: Callable[..., Profile]
) -> None:
    name = unique_name("foreign")
    foreign = docker_client.containers.create(
        TINY_IMAGE, name=name, volumes=list(host_mounts(with_vllm=False))
    )
    try:
        status = launch(tiny_profile(container_name=name)).wait_done(30)
        assert status.state is ServerState.FAILED and status.failure is not None
        assert status.failure.kind is FailureKind.CONTAINER_NAME_TAKEN, status.failure
        assert "did not create" in status.failure.summary
        assert docker_client.containers.get(name).id == foreign.id  # untouched
    finally:
        foreign.remove(force=True)


def test_adopt_after_restart_finds_ours_and_ignores_others(
    docker_client: Any, unique_name: Callable[[str], str], tiny_profile: Callable[..., Profile]
) -> None:
    profile = tiny_profile()
    first = launch(profile)
    other = docker_client.containers.run(
        TINY_IMAGE,
        name=unique_name("unlabelled"),
        detach=True,
        init=True,
        volumes=list(host_mounts(with_vllm=False)),
    )
    try:
        assert first.wait_ready(30).state is ServerState.READY
        # A new runtime, as after an app restart: it knows nothing but what the engine says.
        found = DockerRuntime().adopt()
        adopted = [h for h in found if h.container_id == first.container_id]
        assert len(adopted) == 1
        assert all(h.container_id != other.id for h in found)
        handle = adopted[0]
        assert handle.profile_name == profile.name
        assert handle.plan.host_port == first.plan.host_port
        assert handle.wait_ready(15).state is ServerState.READY
        assert handle.stop(timeout=10).state is ServerState.STOPPED
        assert gone(docker_client, profile.name)
        other.reload()
        assert other.status == "running"  # never touched
    finally:
        other.remove(force=True)
        first.stop(timeout=5)
