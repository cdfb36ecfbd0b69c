"""A Docker server's handle: launch (pull, create, start), logs and phases, readiness, exit and stop.

Split from :mod:`~llm_dyno.core.runtime.docker_backend`, which holds the runtime (plan, launch, adopt)
and still exports :class:`DockerServerHandle`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
import docker.errors
import docker.utils
from docker.models.containers import Container

from llm_dyno.core.atomic import open_no_follow
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.profiles.model import ExecHook, InitHook
from llm_dyno.core.runtime import docker_errors as errs
from llm_dyno.core.runtime.base import (
    FailureKind,
    FailureReason,
    LaunchPlan,
    ServerHandle,
    ServerState,
    ServerStatus,
    answer_failure,
)
from llm_dyno.core.runtime.docker_bounds import EngineAnswerRefused
from llm_dyno.core.runtime.docker_errors import DockerError
from llm_dyno.core.runtime.docker_hooks import run_hooks, run_init_containers
from llm_dyno.core.runtime.docker_secrets import secret_archive
from llm_dyno.core.runtime.docker_spec import (
    network_to_create,
)
from llm_dyno.core.runtime.docker_volume_create import prepare_volumes
from llm_dyno.core.runtime.launch_spec import ContainerSpec
from llm_dyno.core.runtime.logfiles import log_path
from llm_dyno.core.runtime.ownership import engine_id, with_proof
from llm_dyno.core.runtime.picked_port import PICKED_BY_DOCKER, with_picked_port
from llm_dyno.core.runtime.pull_progress import PullProgress
from llm_dyno.core.runtime.readiness import ReadinessProbe
from llm_dyno.core.runtime.registry_files import mark_stopped, was_stopped
from llm_dyno.core.runtime.stream_bounds import StreamBounds, log_lines, log_pieces, pull_lines

if TYPE_CHECKING:
    from llm_dyno.core.runtime.logformats import PhaseTracker

__all__ = ["DockerServerHandle"]

_KEPT_LOG_LIMIT = 1 << 30  # the saved log of a container that is removed
_KEPT_LOG_DEADLINE_S = 600.0  # 1 GiB over a slow ssh engine; never without an end


def _kept_log_bounds(container: Container) -> StreamBounds:
    return StreamBounds(
        f"the log of container {container.name}", max_bytes=_KEPT_LOG_LIMIT, deadline_s=_KEPT_LOG_DEADLINE_S
    )


_TAIL_LINES = 250  # the cause of a failed start is often far above the last line


def _classify(lines: list[str], exit_code: int | None) -> FailureReason:
    """Why a container ended, from its log tail (the telemetry package owns the log formats)."""
    from llm_dyno.core.runtime.logformats import classify_failure

    return classify_failure(lines, exit_code)


def _pull_events(lines: list[str], image: str) -> list[dict[str, Any]]:
    """The pull progress events in ``lines``; a line that is no JSON object (cut, garbled) is skipped."""
    events = []
    for line in lines:
        try:
            event = loads_outside(line, f"the Docker engine's pull of {image}")
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class DockerServerHandle(ServerHandle):
    """A vLLM server in a container. Thread-safe; :meth:`stop` removes the container and keeps its log."""

    def __init__(self, plan: LaunchPlan, *, host: str | None) -> None:
        super().__init__(plan)
        self.host = host
        self.container: Container | None = None
        self.log_file: Path | None = None  # where the container's full log was saved, once it is gone
        self._client: docker.DockerClient | None = None
        # Imported here so that planning (a dry run) does not load the log parsers.
        from llm_dyno.core.runtime.logformats import PhaseTracker

        self._tracker: PhaseTracker = PhaseTracker()
        self._stopping = threading.Event()
        self._exit_code: int | None = None
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._cleaned = False
        self._probe: ReadinessProbe | None = None

    @property
    def exit_code(self) -> int | None:
        """The container's exit code once it has ended."""
        return self._exit_code

    @property
    def container_id(self) -> str | None:
        """The container's id, once created."""
        return self.container.id if self.container is not None else None

    @property
    def registry_key(self) -> str:
        """The container's id (the profile's name until it is created)."""
        return str(self.container_id or super().registry_key)

    @property
    def instance_id(self) -> str:
        """What a stop mark names: the container."""
        return f"docker-{str(self.container_id or self.profile_name)[:12]}"

    # ---- state -------------------------------------------------------------------------------
    def _status_to(self, state: ServerState, detail: str = "", progress: float | None = None) -> None:
        if self._stopping.is_set() and state.is_loading:
            return  # a launch step finishing after stop() began must not look like progress
        self._set_status(ServerStatus(state, time.time(), detail, progress))

    def _fail(self, reason: FailureReason) -> None:
        if self._probe is not None:
            self._probe.cancel()
        self._set_status(ServerStatus(ServerState.FAILED, time.time(), reason.summary, failure=reason))

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=f"{name}:{self.profile_name}", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    # ---- launch ------------------------------------------------------------------------------
    def _launch(self) -> None:
        try:
            if self._client is None:  # else the one the launch's adoption connected
                self._client = errs.connect(self.host)
            planned = self.plan.spec
            if not isinstance(planned, ContainerSpec):
                raise TypeError(f"a {self.plan.runtime} plan is not a container")  # a bug: never planned so
            spec = planned.for_engine(reveal=True)  # what plan showed, with the secrets filled in
            # compose environment: secrets, read now: an unset variable refuses before anything is made
            archive = secret_archive(planned.files) if planned.files else None
            engine = engine_id(self._client.info())  # the proof binds the engine it is made on
            spec["labels"] = with_proof(spec.get("labels") or {}, str(spec["name"]), engine)
            self._ensure_image(str(spec["image"]))
            if self._stopping.is_set():
                return
            self._status_to(ServerState.CREATING, f"creating container {planned.name}")
            # as Compose: image volumes checked against the engine (and pulled), volumes created, first
            prepare_volumes(self._client, self.plan.profile, self.host, self._ensure_image)
            self._ensure_network()
            self.container = self._create(spec)
            if planned.pre_start and not self._run_pre_start(planned.pre_start, spec):
                return
            try:
                if archive is not None:
                    self._write_files(archive, any(f.uid or f.gid for f in planned.files))
                self.container.start()
            except docker.errors.APIError as exc:
                # A failed start leaves the created container behind: remove it.
                with contextlib.suppress(docker.errors.DockerException):
                    self.container.remove(force=True)
                self._cleaned = True
                raise errs.start_error(exc, spec) from exc
        except DockerError as exc:
            self._fail(exc.reason())
            return
        except DynoError as exc:  # e.g. an installation key that is refused
            self._fail(FailureReason(FailureKind.UNKNOWN, exc.message, hint=exc.hint or ""))
            return
        except docker.errors.DockerException as exc:
            self._fail(FailureReason(FailureKind.UNKNOWN, f"Docker: {errs.api_message(exc)}"))
            return
        if self.plan.host_port == PICKED_BY_DOCKER and not self._read_picked_port():
            return
        if planned.post_start and not self._run_post_start(planned.post_start):
            return
        self._status_to(ServerState.STARTING, "container started")
        self._follow(since=None)

    def _write_files(self, archive: bytes, with_owner: bool) -> None:
        """Copy the in-memory tar of secret files into the created container (``docker cp`` of
        Compose's ``injectSecrets``); ``copyUIDGID`` keeps the owner a secret's uid/gid names, which
        docker-py's ``put_archive`` cannot ask for."""
        api = self._docker.api
        url = api._url("/containers/{0}/archive", self._container.id)
        params = {"path": "/", **({"copyUIDGID": "1"} if with_owner else {})}
        api._raise_for_status(api._put(url, params=params, data=archive))

    def _run_pre_start(self, hooks: tuple[InitHook, ...], create: dict[str, Any]) -> bool:
        """Compose's pre_start hooks, each a container of its own run to completion before the server's
        starts; False (the created container removed, the launch failed with the hook's status, or
        stopped) when one fails or a stop came meanwhile."""
        self._status_to(ServerState.CREATING, f"running {len(hooks)} pre_start hook(s)")
        try:
            for image in {h.image for h in hooks if h.image}:
                self._ensure_image(image)  # pulled like the server's image
            stopping, emit = self._stopping, self._on_line
            if run_init_containers(self._docker, self._container, create, hooks, emit, stopping):
                return True
            self._keep_log_and_remove()
            return False
        except (DynoError, docker.errors.DockerException) as exc:
            return self._hook_failed(exc, "pre_start")

    def _hook_failed(self, exc: Exception, when: str) -> bool:
        """A lifecycle hook failed the launch: the container removed (its log kept), the failure said
        with the hook's own output lines; always False."""
        message = exc.message if isinstance(exc, DynoError) else errs.api_message(exc)
        said = tuple(line for line in self.logs.lines(last=50) if line.startswith(f"[{when}]"))
        self._stopping.set()
        self._keep_log_and_remove()
        hint = getattr(exc, "hint", "") or ""
        self._fail(FailureReason(FailureKind.UNKNOWN, message, hint=hint, excerpt=said[-20:]))
        return False

    def _run_post_start(self, hooks: tuple[ExecHook, ...]) -> bool:
        """Compose's post_start hooks, in the started container; False (the container removed, the
        launch failed with the hook's status) when one fails, as a failing hook fails ``up``."""
        self._status_to(ServerState.STARTING, f"running {len(hooks)} post_start hook(s)")
        try:
            run_hooks(self._docker.api, str(self._container.id), hooks, "post_start", self._on_line)
            return True
        except (DynoError, docker.errors.DockerException) as exc:
            return self._hook_failed(exc, "post_start")

    def _run_pre_stop(self, timeout: float) -> str:
        """Compose's pre_stop hooks before the stop; what went wrong ("" when nothing did). The stop
        goes on either way: the user asked for it (Compose's ``down`` stops at a failing hook)."""
        spec = self.plan.spec
        if not isinstance(spec, ContainerSpec) or not spec.pre_stop or self._client is None:
            return ""
        try:
            run_hooks(
                self._client.api, str(self._container.id), spec.pre_stop, "pre_stop", self._on_line, timeout
            )
            return ""
        except (DynoError, docker.errors.DockerException) as exc:
            message = exc.message if isinstance(exc, DynoError) else errs.api_message(exc)
            self._on_line(f"[pre_stop] {message}")
            return message

    def _read_picked_port(self) -> bool:
        """Call the host port Docker picked (``- 8000``), read back from the container; False (the
        container removed, its log kept) when Docker published none."""
        try:
            self._container.reload()
            self.plan = with_picked_port(self.plan, self._container.attrs)
            return True
        except (DynoError, docker.errors.DockerException) as exc:
            message = exc.message if isinstance(exc, DynoError) else errs.api_message(exc)
            self._stopping.set()
            self._keep_log_and_remove()
            self._fail(FailureReason(FailureKind.UNKNOWN, message, hint=getattr(exc, "hint", "") or ""))
            return False

    @property
    def _docker(self) -> docker.DockerClient:
        if self._client is None:
            raise RuntimeError("no Docker client yet")  # a bug: every caller runs after connect()
        return self._client

    @property
    def _container(self) -> Container:
        if self.container is None:
            raise RuntimeError("no container yet")  # a bug: followers start after create()
        return self.container

    def _ensure_image(self, image: str) -> None:
        try:
            self._docker.images.get(image)
            return
        except docker.errors.ImageNotFound:
            pass
        except docker.errors.APIError as exc:  # e.g. an invalid reference
            raise errs.image_error(image, errs.api_message(exc)) from exc
        progress = PullProgress(image)
        self._status_to(ServerState.PULLING, progress.describe(), None)
        repo, tag = docker.utils.parse_repository_tag(image)
        last = 0.0
        # one JSON event a line, as the engine writes them, read within bounds (stream_bounds: lines
        # cut, a size cap, a deadline, a longest wait for an event); a stop ends the stream, which
        # cancels the pull
        try:
            for line in pull_lines(self._docker.api, repo, tag or "latest", cancel=self._stopping):
                for event in _pull_events([line], image):
                    if "error" in event:
                        raise errs.image_error(image, str(event.get("error")))
                    now = time.monotonic()
                    if progress.feed(event) and now - last > 0.25:
                        last = now
                        self._status_to(ServerState.PULLING, progress.describe(), progress.fraction)
        except EngineAnswerRefused as exc:
            raise errs.image_error(image, exc.message) from None
        except docker.errors.APIError as exc:
            raise errs.image_error(image, errs.api_message(exc)) from exc

    def _ensure_network(self) -> None:
        """Create the network the plan joins (a compose project's) when it does not exist yet."""
        wanted = network_to_create(self.plan)
        if wanted is None:
            return
        name, labels = wanted
        if not any(n.name == name for n in self._docker.networks.list(names=[name])):
            self._docker.networks.create(name, driver="bridge", labels=labels)

    def _create(self, spec: dict[str, Any]) -> Container:
        try:
            return self._docker.containers.create(**spec)
        except docker.errors.ImageNotFound as exc:
            raise errs.image_error(str(spec["image"]), errs.api_message(exc)) from exc
        except docker.errors.APIError as exc:
            if exc.status_code == 409 or "is already in use" in errs.api_message(exc):
                raise errs.name_taken_error(self._docker, str(spec["name"])) from exc
            raise errs.start_error(exc, spec) from exc

    # ---- following a running container -------------------------------------------------------
    def _follow(self, since: int | None) -> None:
        """Start the log and exit watchers, then wait for readiness (in the calling thread)."""
        self._spawn(lambda: self._read_logs(since), "docker-logs")
        self._spawn(self._watch_exit, "docker-wait")

        probe = ReadinessProbe(self.plan.base_url, key=self.plan.key, interval_s=0.1)
        self._probe = probe
        if self._stopping.is_set() or not self.status.state.is_live:
            probe.cancel()  # it died or is being stopped before we got here
        result = probe.wait()
        if result.ready:
            self._status_to(ServerState.READY, "serving")
        elif since is None and result.error != "cancelled" and not self._stopping.is_set():
            self._stopping.set()  # launched here, it answers but not as vLLM does: remove it (log kept)
            self._keep_log_and_remove()
            self._fail(answer_failure(result.error))

    def _read_logs(self, since: int | None) -> None:
        container = self._container
        try:  # followed for the container's life, never holding more than a piece and a line
            for line in log_lines(container.client.api, str(container.id), follow=True, since=since):
                self._on_line(line)
        except docker.errors.DockerException:
            pass  # the container went away; the exit watcher reports it

    def _on_line(self, line: str) -> None:
        self.logs.append(line)
        update = self._tracker.feed(line)
        if update is not None and self.status.state.is_loading and not self._stopping.is_set():
            self._status_to(update.state, update.detail, update.progress)

    def _watch_exit(self) -> None:
        try:
            result = self._container.wait()
            self._exit_code = int(result.get("StatusCode", -1))
        except docker.errors.DockerException:
            self._exit_code = None
        if self._stopping.is_set():
            return  # stop() reports the end
        for thread in list(self._threads):
            if thread.name.startswith("docker-logs"):
                thread.join(timeout=5)  # the last lines hold the cause
        if was_stopped(self.instance_id):  # `llm-dyno stop` or another window stopped it on purpose
            self._status_to(ServerState.STOPPED, f"stopped by another llm-dyno (exit code {self._exit_code})")
            self._close_client()
            return
        reason = _classify(self.logs.lines(last=_TAIL_LINES), self._exit_code)
        self._keep_log_and_remove()
        self._fail(reason)
        self._close_client()  # the handle is over: release the engine connection now, not at GC

    def _close_client(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            errs.close_client(client)

    def _keep_log_and_remove(self) -> None:
        """Save the container's full log under data_dir()/logs, then remove the container."""
        with self._lock:
            if self._cleaned or self.container is None:
                return
            self._cleaned = True
        container = self.container
        if container.attrs.get("HostConfig", {}).get("RestartPolicy", {}).get("Name") not in (None, "", "no"):
            return  # docker restarts it: leave it to docker
        with contextlib.suppress(docker.errors.DockerException, OSError):
            path = log_path(self.profile_name, str(container.id)[:12])
            path.parent.mkdir(parents=True, exist_ok=True)
            with os.fdopen(open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as out:
                # streamed: a long run's log is far past the bound on answers read whole
                # (docker_bounds); capped and with a deadline (stream_bounds), so an engine that never
                # ends it, or drips it, can neither fill the disk nor hold the end of the handle
                try:
                    for piece in log_pieces(
                        container.client.api, str(container.id), _kept_log_bounds(container)
                    ):
                        out.write(piece)
                except EngineAnswerRefused as exc:
                    out.write(f"\n[llm-dyno: log cut here: {exc.message}]\n".encode())
            self.log_file = path
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            # 409 "removal already in progress": another handle (an adopted twin) got there first.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    container.reload()
                except docker.errors.NotFound:
                    break
                time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> ServerStatus:
        """``docker stop`` (SIGTERM, SIGKILL after ``timeout``), keep the log, remove the container."""
        if not self.status.state.is_live:
            return self.status
        self._stopping.set()
        if self._probe is not None:
            self._probe.cancel()
        if self.container is not None:
            mark_stopped(self.instance_id)
        self._status_to(ServerState.STOPPING, "stopping")
        for thread in list(self._threads[:1]):
            if thread.name.startswith("docker-launch"):
                thread.join(timeout=timeout)  # let a create/start in flight finish first
        hook_problem = ""
        if self.container is not None and not self._cleaned:
            hook_problem = self._run_pre_stop(max(1.0, timeout))
            try:
                self.container.stop(timeout=max(1, round(timeout)))
                self._exit_code = int(self.container.wait(timeout=timeout + 10).get("StatusCode", -1))
            except docker.errors.NotFound:
                pass
            except (docker.errors.DockerException, OSError) as exc:
                reason = FailureReason(FailureKind.UNKNOWN, f"could not stop the container: {exc}")
                self._fail(reason)
                return self.status
            self._keep_log_and_remove()
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(timeout=10)
        said = f"; {hook_problem}" if hook_problem else ""
        self._status_to(ServerState.STOPPED, f"stopped (exit code {self._exit_code}){said}")
        self._close_client()
        return self.status
