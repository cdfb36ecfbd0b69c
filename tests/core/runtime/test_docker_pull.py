"""Pulling an image for real: the Docker backend against a real engine and a local registry
(tests/support/registry.py) that serves the tiny test image plus a layer of random bytes.

The engine downloads over HTTP from 127.0.0.1, reports its progress, and the launch shows it; a stop
in the middle of a pull ends it without a container or an image left behind.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import docker.errors
import pytest

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.docker_backend import DockerRuntime
from tests.support.images import TINY_IMAGE
from tests.support.registry import TestRegistry

pytestmark = pytest.mark.docker


@pytest.fixture
def registry(docker_client: Any, test_images: None) -> Iterator[Callable[..., TestRegistry]]:
    """``registry(bytes_per_s=...)`` → a running registry; its image is removed from the engine after."""
    made: list[TestRegistry] = []

    def make(**kwargs: Any) -> TestRegistry:
        reg = TestRegistry(docker_client, TINY_IMAGE, "llm-dyno-test/pulled", **kwargs).__enter__()
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.__exit__(None, None, None)
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(reg.reference, force=True)


def present(client: Any, image: str) -> bool:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def test_a_missing_image_is_pulled_with_progress_then_served(
    docker_client: Any, registry: Callable[..., TestRegistry], tiny_profile: Callable[..., Profile]
) -> None:
    reg = registry(pad_mb=6, bytes_per_s=3e6)  # ~2 s of download
    assert not present(docker_client, reg.reference)
    runtime = DockerRuntime()
    handle = runtime.launch(runtime.plan(tiny_profile(image=reg.reference)))
    seen: list[ServerStatus] = []
    handle.subscribe(seen.append)
    try:
        status = handle.wait_ready(120)
        assert status.state is ServerState.READY, status
        pulling = [s for s in seen if s.state is ServerState.PULLING]
        fractions = [s.progress for s in pulling if s.progress]
        assert fractions and all(0 < f <= 1 for f in fractions), pulling
        assert fractions == sorted(fractions)  # the bar only moves forward
        assert any(s.detail == f"pulling {reg.reference}: 6 / 6 MB" for s in pulling)
        assert pulling[0].progress is None  # sizes not known yet: no bar that jumps to 100 %
        assert present(docker_client, reg.reference)
        assert any("/blobs/" in r for r in reg.requests)  # the layers came from this registry
    finally:
        handle.stop(10)


def test_stop_in_the_middle_of_a_pull_leaves_nothing(
    docker_client: Any, registry: Callable[..., TestRegistry], tiny_profile: Callable[..., Profile]
) -> None:
    reg = registry(pad_mb=8, bytes_per_s=0.5e6)  # ~17 s of download: stopped long before the end
    profile = tiny_profile(image=reg.reference)
    runtime = DockerRuntime()
    handle = runtime.launch(runtime.plan(profile))
    downloading = threading.Event()
    handle.subscribe(lambda s: s.state is ServerState.PULLING and s.progress and downloading.set())
    assert downloading.wait(60), handle.status
    started = time.monotonic()
    status = handle.stop(10)
    assert status.state is ServerState.STOPPED, status
    assert time.monotonic() - started < 10
    assert reg.aborted.wait(20)  # the engine dropped the download
    assert not present(docker_client, reg.reference)
    assert not docker_client.containers.list(all=True, filters={"name": profile.docker.container_name})
