"""A launch through a given Docker host (ssh://, tcp:// + TLS, a context), checked end to end."""

from __future__ import annotations

from typing import Any

import httpx

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerState
from llm_dyno.core.runtime.docker_backend import DockerRuntime
from llm_dyno.core.runtime.docker_common import LABEL_PROFILE


def launch_through(host: str, base: Profile, local_client: Any) -> None:
    """Run ``base`` on the engine at ``host`` (the local engine behind another transport): it gets
    READY and answers, its container carries the profile's label on the local engine, and a stop
    leaves nothing."""
    assert base.docker is not None
    profile = base.model_copy(update={"docker": base.docker.model_copy(update={"host": host})})
    runtime = DockerRuntime(hosts=(host,))
    handle = runtime.launch(runtime.plan(profile))
    try:
        status = handle.wait_ready(60)
        assert status.state is ServerState.READY, status
        assert httpx.get(f"{handle.plan.base_url}/v1/models", timeout=10).status_code == 200
        container = local_client.containers.get(base.docker.container_name)
        assert container.labels[LABEL_PROFILE] == profile.name
    finally:
        status = handle.stop(10)
    assert status.state is ServerState.STOPPED
    assert not local_client.containers.list(all=True, filters={"name": base.docker.container_name})
