"""ServerManager: backend lookup, collisions with live servers, and the host-port bind test."""

from __future__ import annotations

import socket
import time

import pytest

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.runtime.base import LaunchPlan, ServerHandle, ServerState, ServerStatus
from llm_dyno.core.runtime.manager import LaunchBlocked, ServerManager, port_in_use
from llm_dyno.core.runtime.process_backend import ProcessRuntime


class _Live(ServerHandle):
    """A handle that only holds a plan and a live state: enough for collision checks."""

    def __init__(self, plan: LaunchPlan) -> None:
        super().__init__(plan)
        self._set_status(ServerStatus(ServerState.READY, time.time()))

    @property
    def exit_code(self) -> int | None:
        return None

    def stop(self, timeout: float = 30.0) -> ServerStatus:
        self._set_status(ServerStatus(ServerState.STOPPED, time.time()))
        return self.status


def profile(name: str, port: int, gpus: tuple[int, ...] | None = None) -> Profile:
    return Profile(name=name, runtime=Runtime.PROCESS, model="org/m", args=("--port", str(port)), gpus=gpus)


def manager_with(*live: Profile) -> ServerManager:
    manager = ServerManager()
    for p in live:
        manager._handles[p.name] = _Live(ProcessRuntime().plan(p))
    return manager


def test_port_collisions_name_the_other_profile() -> None:
    # a GPU in common is the GPU budget's to judge (tests/test_gpu_budget_cli.py), not a collision
    manager = manager_with(profile("alpha", 8100, gpus=(0, 1)))
    problems = manager.collisions(manager.plan(profile("beta", 8100, gpus=(1, 2))))
    assert problems == [
        "port 8100 is already used by profile 'alpha' (http://127.0.0.1:8100); change --port in one of them",
    ]
    assert manager.collisions(manager.plan(profile("gamma", 8101, gpus=(2,)))) == []
    assert "already running" in manager.collisions(manager.plan(profile("alpha", 8102)))[0]


def test_launch_refuses_a_collision_before_starting_anything() -> None:
    manager = manager_with(profile("alpha", 8100))
    with pytest.raises(LaunchBlocked, match="alpha"):
        manager.launch(profile("beta", 8100))
    assert manager.get("beta") is None


def test_port_taken_by_another_program() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
        with pytest.raises(LaunchBlocked, match=f"port {port} on 127.0.0.1 is already taken"):
            ServerManager().launch(profile("beta", port))
    assert not port_in_use("127.0.0.1", port)


def test_stopped_servers_do_not_collide() -> None:
    manager = manager_with(profile("alpha", 8100))
    manager.stop("alpha")
    assert manager.collisions(manager.plan(profile("beta", 8100))) == []
    with pytest.raises(DynoError, match="not running"):
        manager.stop("alpha")


def test_unknown_and_lazy_runtimes() -> None:
    manager = ServerManager()
    with pytest.raises(DynoError, match="unknown runtime"):
        manager.runtime("kubernetes")
    try:
        backend = manager.runtime("docker")  # the Docker backend, when it is installed
    except DynoError as exc:
        assert "not available" in exc.message
    else:
        assert backend.name == "docker"
