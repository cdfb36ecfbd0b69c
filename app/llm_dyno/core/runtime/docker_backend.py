"""The Docker runtime: run a profile's vLLM server as a container through the docker SDK.

:meth:`DockerRuntime.plan` is pure (see :mod:`~llm_dyno.core.runtime.docker_spec`). :meth:`launch`
returns at once; a thread pulls the image if needed, creates and starts the container, and the
handle then follows its logs (phases) and HTTP readiness, and notices when it dies. Every container
carries the ``llm-dyno.managed=1`` label; :meth:`adopt` finds those and never touches any other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import docker
import docker.errors
import docker.utils
from docker.models.containers import Container

from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.profiles.model import Profile, profile_from_data
from llm_dyno.core.runtime import docker_errors as errs
from llm_dyno.core.runtime.base import (
    LaunchPlan,
    Runtime,
    ServerState,
)
from llm_dyno.core.runtime.docker_bounds import EngineAnswerRefused
from llm_dyno.core.runtime.docker_common import LABEL_MANAGED, LABEL_PROFILE, LABEL_SNAPSHOT
from llm_dyno.core.runtime.docker_errors import DockerError
from llm_dyno.core.runtime.docker_handle import DockerServerHandle
from llm_dyno.core.runtime.docker_spec import DockerLaunchPlan, plan_container
from llm_dyno.core.runtime.ownership import (
    NOT_OURS,
    engine_id,
    host_mismatch,
    installation_key,
    launched_here,
)
from llm_dyno.core.runtime.picked_port import with_picked_port

if TYPE_CHECKING:
    pass

__all__ = ["DockerError", "DockerLaunchPlan", "DockerRuntime", "DockerServerHandle"]

RETRY_S = 30.0  # an engine that did not answer is asked again after this long


class DockerRuntime(Runtime):
    """Runs profiles as Docker containers on the local engine or on each profile's ``docker.host``."""

    name = "docker"

    def __init__(
        self,
        hosts: Iterable[str | None] = (None,),
        profile_lookup: Callable[[str], Profile | None] | None = None,
    ) -> None:
        """``hosts``: engines :meth:`adopt` looks at; ``profile_lookup``: stored profile by name."""
        self.hosts = tuple(hosts)
        self._lookup = profile_lookup
        self.warnings: list[str] = []  # engines and containers the last adopt() could not read
        self._retry_at: dict[str | None, float] = {}  # engines that did not answer: when to ask again
        # the engine a launch's adoption connected to, kept for that launch (one connection per launch)
        self._for_launch: dict[str | None, docker.DockerClient] = {}
        self._for_launch_lock = threading.Lock()

    def plan(self, profile: Profile) -> DockerLaunchPlan:
        """The container for a profile, built without side effects."""
        return plan_container(profile)

    def launch(self, plan: LaunchPlan) -> DockerServerHandle:
        """Start the plan in a background thread; returns the handle at once."""
        host = plan.profile.docker.host if plan.profile.docker is not None else None
        handle = DockerServerHandle(plan, host=host)
        with self._for_launch_lock:
            handle._client = self._for_launch.pop(host, None)  # None: _launch connects
        handle._spawn(handle._launch, "docker-launch")
        return handle

    def adopt(
        self, known: Collection[str] = (), *, hosts: Iterable[str | None] | None = None
    ) -> list[DockerServerHandle]:
        """Running containers labelled ``llm-dyno.managed=1`` on the known hosts (or ``hosts``; others
        are ignored), with the profile snapshot each was launched with; containers in ``known`` are
        left alone. Given ``hosts`` (a launch's look before it starts), the connection to each engine
        is kept for the :meth:`launch` that follows, which then connects no second time.

        An engine that does not answer, or one container that cannot be followed (no snapshot, a
        label edited by hand), is named in :attr:`warnings` and skipped; it never stops the others
        from being found. An engine that did not answer is asked again after ``RETRY_S`` seconds."""
        self.warnings = []
        handles: list[DockerServerHandle] = []
        now = time.monotonic()
        try:
            key = installation_key(create=False)
        except DynoError as exc:
            self.warnings.append(f"{exc.message} ({exc.hint})" if exc.hint else exc.message)
            key = None
        scanned = self.hosts if hosts is None else tuple(hosts)
        for host in scanned:
            if hosts is None and self._retry_at.get(host, 0.0) > now:
                continue
            try:
                client = errs.connect(host)
                try:
                    engine = engine_id(client.info())  # what the proofs of its containers must bind
                    containers = client.containers.list(filters={"label": f"{LABEL_MANAGED}=1"})
                except BaseException:
                    errs.close_client(client)
                    raise
                self._keep_or_close(client, host, for_launch=hosts is not None)
            except (DynoError, docker.errors.DockerException, OSError) as exc:
                self._retry_at[host] = now + RETRY_S
                if isinstance(exc, (DynoError, EngineAnswerRefused)):
                    message = exc.message
                else:
                    message = f"{type(exc).__name__}: {exc}"
                self.warnings.append(f"engine {host or 'default'}: {message}")
                continue
            self._retry_at.pop(host, None)
            for container in containers:
                if container.id in known:
                    continue
                if not launched_here(container.labels or {}, container.name or "", key, engine):
                    # labels anyone can write (an image's are copied to its containers): no request
                    # goes to it, least of all with a key
                    self.warnings.append(f"container {container.name}: cannot be followed: {NOT_OURS}")
                    continue
                try:
                    plan = self._plan_for(container)
                    named = plan.profile.docker.host if plan.profile.docker is not None else None
                    elsewhere = host_mismatch(named, host)
                    if elsewhere is not None:
                        # an engine can claim another's ID: follow a container only on the engine its
                        # (signed) snapshot names; that engine, when scanned too, adopts it itself
                        if named not in scanned:
                            self.warnings.append(
                                f"container {container.name}: cannot be followed: {elsewhere}"
                            )
                        continue
                    handles.append(self._adopt_one(container, host, plan))
                except (DynoError, docker.errors.DockerException, ValueError, KeyError, TypeError) as exc:
                    message = exc.message if isinstance(exc, DynoError) else f"{type(exc).__name__}: {exc}"
                    self.warnings.append(f"container {container.name}: cannot be followed: {message}")
        return handles

    def _keep_or_close(self, client: docker.DockerClient, host: str | None, *, for_launch: bool) -> None:
        with self._for_launch_lock:
            stale = self._for_launch.pop(host, None)
            if for_launch:
                self._for_launch[host] = client
        for unused in (stale, None if for_launch else client):
            if unused is not None:
                errs.close_client(unused)

    def _adopt_one(self, container: Container, host: str | None, plan: LaunchPlan) -> DockerServerHandle:
        handle = DockerServerHandle(plan, host=host)
        # A client of its own: stop() closes it, which must not cut the others' log streams.
        handle._client = errs.connect(host)
        handle.container = handle._client.containers.get(container.id)
        handle.plan = with_picked_port(plan, handle.container.attrs)  # `- 8000`: the port Docker picked
        handle._status_to(ServerState.STARTING, "adopted; checking /health")
        handle._spawn(_follow_from_now(handle), "docker-adopt")
        return handle

    def _plan_for(self, container: Container) -> LaunchPlan:
        """The plan of the profile snapshot the container was launched with (never its command, which
        may hold values resolved from secrets); the stored profile of that name for older containers."""
        labels = container.labels or {}
        name = labels.get(LABEL_PROFILE, "")
        snapshot = labels.get(LABEL_SNAPSHOT)
        if snapshot:
            source = f"container {container.name}"
            data = loads_outside(snapshot, f"{source}: label {LABEL_SNAPSHOT}")
            profile = profile_from_data(data, source=source)
        else:
            found = self._lookup(name) if self._lookup and name else None
            if found is None:
                raise DynoError(
                    f"it has no profile snapshot (launched by an older LLM Dyno) and no profile {name!r}",
                    hint=f"stop it with `docker stop {container.name}`, then launch the profile again",
                )
            profile = found
        return plan_container(profile)


def _follow_from_now(handle: DockerServerHandle) -> Callable[[], None]:
    since = int(time.time())
    return lambda: handle._follow(since=since)
