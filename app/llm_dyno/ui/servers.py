"""The GUI side of running servers: launches and stops in worker threads, core events as Qt signals.

Core handles call back from their own threads; every callback here only emits a signal (Qt queues it to
the GUI thread) or appends to a locked queue. Log lines are batched: a GUI-thread timer drains the queue
every ``LOG_FLUSH_MS`` and emits one ``logLines`` per profile, so a chatty server cannot flood the GUI.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from llm_dyno.core.httpclient import http_client
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerHandle, ServerState, ServerStatus
from llm_dyno.ui.jobs import run_task

if TYPE_CHECKING:  # the runtimes and the registry load when the window first reads it (after start-up)
    from llm_dyno.core.runtime.idle import IdleTimers
    from llm_dyno.core.runtime.manager import ServerManager

LOG_FLUSH_MS = 100
REFRESH_MS = 1000  # how often the registry is read for servers launched or stopped elsewhere


def lamp_for(state: ServerState | None) -> str:
    """The list lamp of a server state: stopped, loading, ready or failed."""
    if state is None or state is ServerState.STOPPED:
        return "stopped"
    if state is ServerState.READY:
        return "ready"
    if state is ServerState.FAILED:
        return "failed"
    return "loading"


class ServerBridge(QObject):
    """Launch, stop and observe servers for the GUI. Never blocks the GUI thread."""

    statusChanged = Signal(str, object)  # profile name, ServerStatus
    logLines = Signal(str, list)  # profile name, new lines (batched)
    launchStarted = Signal(str)  # a handle exists; its logs and status follow
    launchFailed = Signal(str, str)  # refused or failed before a handle existed
    stopFinished = Signal(str)
    stopFailed = Signal(str, str)
    planReady = Signal(str, str)  # profile name, description
    planFailed = Signal(str, str)
    runningRequests = Signal(str, object)  # profile name, int | None (None: unknown)
    registryWarnings = Signal(list)  # what the last look at the registry could not read
    busyChanged = Signal(str)  # a launch or stop job of this profile has ended

    def __init__(self, manager: ServerManager | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._manager = manager
        self._closed = False  # shut down: the window is gone, nothing is followed any more
        self._making_manager = threading.Lock()
        if manager is not None and manager.on_new is None:
            manager.on_new = self._follow
        self._lock = threading.Lock()
        self._pending: dict[str, list[str]] = defaultdict(list)
        self._unsubscribe: dict[str, list[Callable[[], None]]] = {}
        self._busy: set[str] = set()
        self._timer = QTimer(self)
        self._timer.setInterval(LOG_FLUSH_MS)
        self._timer.timeout.connect(self._flush_logs)
        self._timer.start()
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setInterval(REFRESH_MS)
        self._refresh_timer.timeout.connect(self.adopt)
        self._adopting = threading.Lock()
        self.idle_timers: IdleTimers | None = None  # the idle timeouts (core/runtime/idle.py)

    @property
    def manager(self) -> ServerManager:
        """The core server manager (made on first use, which may be in a worker: the first look at the
        registry after start-up, or a launch; the lock keeps it to one)."""
        with self._making_manager:
            if self._manager is None:
                from llm_dyno.core.runtime.manager import ServerManager

                self._manager = ServerManager()
            if self._manager.on_new is None:
                self._manager.on_new = self._follow
            return self._manager

    def _follow(self, handle: ServerHandle) -> None:
        """A server launched through the registry (by the window, its A/B) or found running (launched
        elsewhere, or before a restart): show its status and logs."""
        if self._closed:
            return
        self._watch(handle)
        self.launchStarted.emit(handle.profile_name)

    # ---- queries (GUI thread, cheap) -----------------------------------------------------------
    def handle(self, name: str) -> ServerHandle | None:
        """The tracked handle of a profile."""
        return self.manager.get(name) if self._manager is not None else None

    def status(self, name: str) -> ServerStatus | None:
        """The latest status of a profile's server (None if never launched)."""
        handle = self.handle(name)
        return handle.status if handle is not None else None

    def is_live(self, name: str) -> bool:
        """Whether the profile's server exists (loading, ready, stopping)."""
        status = self.status(name)
        return status is not None and status.state.is_live

    def is_busy(self, name: str) -> bool:
        """Whether a launch or stop of this profile is in progress in a worker."""
        with self._lock:
            return name in self._busy

    def live_names(self) -> list[str]:
        """Profiles whose servers are live."""
        return [h.profile_name for h in self.manager.live()] if self._manager is not None else []

    # ---- commands (run in workers) -------------------------------------------------------------
    def _run(self, name: str, job: Callable[[], None], label: str, failed: Callable[[str], None]) -> None:
        with self._lock:
            self._busy.add(name)

        def work() -> None:
            try:
                job()
            finally:
                with self._lock:
                    self._busy.discard(name)
                self.busyChanged.emit(name)  # the window's Launch / Stop follow the end of the job

        run_task(f"{label} of {name}", work, failed)

    def launch(self, profile: Profile) -> None:
        """Launch a profile in a worker; ``launchStarted`` then ``statusChanged`` / ``logLines`` follow."""
        name = profile.name

        def job() -> None:
            self.manager.launch(profile)  # the handle reaches _follow as soon as it exists

        self._run(name, job, "launch", lambda message: self.launchFailed.emit(name, message))

    def stop(self, name: str, timeout: float = 30.0) -> None:
        """Stop a profile's server in a worker; ``stopFinished`` when it is down."""

        def job() -> None:
            self.manager.stop(name, timeout)
            self.stopFinished.emit(name)

        self._run(name, job, "stop", lambda message: self.stopFailed.emit(name, message))

    def plan(self, profile: Profile) -> None:
        """Build the launch plan in a worker (a backend may need to import or connect); ``planReady``."""

        def job() -> None:
            plan = self.manager.with_budget(self.manager.plan(profile))  # beside the servers followed
            self.planReady.emit(profile.name, plan.report())

        run_task(
            f"the plan of {profile.name}", job, lambda message: self.planFailed.emit(profile.name, message)
        )

    def check_running_requests(self, name: str, timeout_s: float = 2.0) -> None:
        """Read ``vllm:num_requests_running`` from the server's /metrics; ``runningRequests`` with it."""
        handle = self.handle(name)
        if handle is None or handle.status.state is not ServerState.READY:
            self.runningRequests.emit(name, 0)
            return
        endpoint = handle.plan.endpoint

        def job() -> None:
            from llm_dyno.core.telemetry.metrics import scrape  # here: the window starts without it

            with http_client(api_key=endpoint.api_key(), timeout_s=timeout_s) as client:
                running = scrape(client, endpoint.url).running
            self.runningRequests.emit(name, None if running is None else int(running))

        # not answering (or no key): None, and the window asks whether to stop anyway
        run_task(f"the requests of {name}", job, lambda _message: self.runningRequests.emit(name, None))

    def follow_registry(self, interval_ms: int = REFRESH_MS) -> None:
        """Find the servers that run now (launched before a restart, or from the CLI) and keep looking
        every ``interval_ms``, so launches and stops made elsewhere show within a second or two."""
        self.adopt()
        self._refresh_timer.setInterval(interval_ms)
        self._refresh_timer.start()

    def adopt(self) -> None:
        """Look at the registry once in a worker (never two looks at a time) and follow what is new."""
        if not self._adopting.acquire(blocking=False):
            return

        def job() -> None:
            try:
                self.manager.refresh()  # what is new reaches _adopted
                self.registryWarnings.emit(list(self.manager.warnings))
            finally:
                self._adopting.release()

        run_task("a look at the running servers", job, lambda message: self.registryWarnings.emit([message]))

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every live server (blocking: for quitting)."""
        if self._manager is not None:
            self._manager.stop_all(timeout)

    # ---- core callbacks (any thread) -----------------------------------------------------------
    def _watch(self, handle: ServerHandle) -> None:
        name = handle.profile_name
        for old in self._unsubscribe.pop(name, []):
            old()

        def on_status(status: ServerStatus) -> None:
            with contextlib.suppress(RuntimeError):  # the bridge was deleted with its window
                self.statusChanged.emit(name, status)

        def on_line(_ts: float, line: str) -> None:
            with self._lock:
                self._pending[name].append(line)

        with self._lock:
            self._pending[name] = []
        self._unsubscribe[name] = [handle.subscribe(on_status), handle.logs.subscribe(on_line)]
        if handle.plan.profile.idle_timeout is not None:
            from llm_dyno.core.runtime.idle import IdleTimers

            self.idle_timers = self.idle_timers or IdleTimers()
            self.idle_timers.follow(handle)
        # what the buffer held before we subscribed goes first; lines seen twice (appended between the
        # subscription and the snapshot) end the snapshot and start the pending list: keep them once
        snapshot = handle.logs.lines()
        with self._lock:
            pending = self._pending[name]
            overlap = min(len(snapshot), len(pending))
            while overlap and snapshot[len(snapshot) - overlap :] != pending[:overlap]:
                overlap -= 1
            self._pending[name] = snapshot + pending[overlap:]
        self.statusChanged.emit(name, handle.status)

    def _flush_logs(self) -> None:
        with self._lock:
            if not any(self._pending.values()):
                return
            batches = {k: v for k, v in self._pending.items() if v}
            self._pending = defaultdict(list)
        for name, lines in batches.items():
            self.logLines.emit(name, lines)

    def shutdown(self) -> None:
        """Stop listening to every handle (the servers keep running), and to servers found later."""
        self._closed = True
        if self._manager is not None and self._manager.on_new == self._follow:
            self._manager.on_new = None
        self._timer.stop()
        self._refresh_timer.stop()
        if self.idle_timers is not None:
            self.idle_timers.shutdown()
        for subs in self._unsubscribe.values():
            for unsubscribe in subs:
                unsubscribe()
        self._unsubscribe.clear()
