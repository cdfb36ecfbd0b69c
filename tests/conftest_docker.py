"""Fixtures for tests that need a real Docker engine (marked ``docker``).

Loaded from tests/conftest.py through ``pytest_plugins``. When no engine answers, those tests are
skipped, except under CI (env ``CI`` set), where they fail: CI runs ``scripts/start-dockerd`` first.
Every container a test makes has a name with this run's id, and all are removed at the end.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from llm_dyno.core.profiles.model import DockerSettings, Profile
from tests.support.images import SMI_IMAGE, TEST_LABEL, TINY_IMAGE, ensure_test_images, host_mounts
from tests.support.parts import missing

RUN_ID = uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    """A docker SDK client for the local engine (skip, or fail under CI, when there is none)."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        missing(f"no Docker engine reachable ({exc})", "scripts/start-dockerd (as root)")
    yield client
    # Remove whatever this run left behind (a failing test may not reach its own cleanup).
    for container in client.containers.list(all=True, filters={"name": RUN_ID}):
        container.remove(force=True)
    client.close()


@pytest.fixture(scope="session")
def test_images(docker_client: Any) -> None:
    """The offline-built test images (built once; fast when they exist)."""
    ensure_test_images(docker_client)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("x")`` → a container-safe name unique to this test run."""

    def make(stem: str) -> str:
        test = request.node.name.replace("test_", "").replace("_", "-")[:30]
        return f"llm-dyno-t-{RUN_ID}-{test}-{stem}"

    return make


@pytest.fixture
def smi_container(
    docker_client: Any, test_images: None, unique_name: Callable[[str], str]
) -> Iterator[Callable[..., str]]:
    """``smi_container("x", FAKE_SMI_GPUS="idle,load")`` → the name of a running container whose
    nvidia-smi replays recorded H200 output (``PATH="/nonexistent"``: one without nvidia-smi)."""
    made: list[Any] = []

    def make(stem: str = "gpu", **env: str) -> str:
        name = unique_name(stem)
        container = docker_client.containers.run(
            SMI_IMAGE,
            name=name,
            detach=True,
            environment=env,
            volumes=list(host_mounts(with_vllm=False)),
            labels={TEST_LABEL: "1"},
        )
        made.append(container)
        return name

    yield make
    for container in made:
        container.remove(force=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def dyno_home(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """LLM_DYNO_HOME in a temporary folder (saved container logs land in data/logs)."""
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def tiny_profile(
    test_images: None, unique_name: Callable[[str], str], dyno_home: Any
) -> Callable[..., Profile]:
    """A factory of profiles that run the fake ``vllm serve`` of the tiny image on a free port."""

    def make(
        stem: str = "srv", *, args: tuple[str, ...] = (), image: str = TINY_IMAGE, **changes: Any
    ) -> Profile:
        name = unique_name(stem)
        docker = DockerSettings(
            image=image,
            container_name=changes.pop("container_name", name),
            ports=(f"{changes.pop('port', free_port())}:8000",),
            volumes=host_mounts(with_vllm=False),
        )
        return Profile(name=name, model="tiny", args=("--port", "8000", *args), docker=docker, **changes)

    return make
