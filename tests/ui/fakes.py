"""A fake runtime for GUI tests: the test drives the handle's status and log lines itself."""

from __future__ import annotations

import socket
import time
from collections.abc import Collection, Iterable

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import LaunchPlan, Runtime, ServerHandle, ServerState, ServerStatus
from llm_dyno.core.runtime.launch_spec import ProcessSpec


class FakeHandle(ServerHandle):
    """A handle whose state the test sets with :meth:`push`."""

    def __init__(self, plan: LaunchPlan) -> None:
        super().__init__(plan)
        self.stopped = False

    def push(self, state: ServerState, **kw: object) -> None:
        """Publish a status (any thread)."""
        self._set_status(ServerStatus(state, time.time(), **kw))  # type: ignore[arg-type]

    def stop(self, timeout: float = 30.0) -> ServerStatus:
        self.stopped = True
        self.push(ServerState.STOPPING)
        self.push(ServerState.STOPPED)
        return self.status

    @property
    def exit_code(self) -> int | None:
        return 0 if self.stopped else None


class FakeRuntime(Runtime):
    """Plans every profile at ``base_url`` and hands out :class:`FakeHandle` objects."""

    name = "process"

    def __init__(self, base_url: str = "http://127.0.0.1:9") -> None:
        self.base_url = base_url
        self.handles: list[FakeHandle] = []

    def plan(self, profile: Profile) -> LaunchPlan:
        # the host port only feeds the manager's "port taken" check: use a free one
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        return LaunchPlan(
            profile, "process", self.base_url, port, None, ProcessSpec(("vllm", "serve", profile.model))
        )

    def launch(self, plan: LaunchPlan) -> ServerHandle:
        handle = FakeHandle(plan)
        self.handles.append(handle)
        return handle

    def adopt(self, known: Collection[str] = ()) -> Iterable[ServerHandle]:
        return []
