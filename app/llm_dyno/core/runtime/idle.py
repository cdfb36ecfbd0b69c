"""Idle timeout: after N minutes without requests, sleep or stop a server; never with one in flight.

Idle is read from the server's own ``/metrics`` (:mod:`llm_dyno.core.telemetry.metrics` knows the
names): none of its counters (requests finished, prompt and generation tokens, …) moved, and nothing is
running or waiting (``vllm:num_requests_running`` / ``vllm:num_requests_waiting``). A server that does
not answer is not idle: nothing is done to it. Before acting, the server is read once more, and a sleep
is sent with ``mode=wait`` (see :mod:`llm_dyno.core.runtime.sleep`).

The timer runs where a server is watched: the window's servers overview runs one per server whose profile
has ``idle_timeout``, and ``llm-dyno idle NAME`` runs one headless. Each writes its countdown beside the
server's record (``<key>.idle.json``), which ``status`` shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.runtime.base import LaunchPlan, ServerHandle, ServerState
from llm_dyno.core.runtime.registry_files import server_key, servers_dir
from llm_dyno.core.runtime.sleep import (
    SleepError,
    is_sleeping,
    read_record,
    sleep_enabled,
    sleep_server,
    sleep_state,
)
from llm_dyno.core.telemetry.metrics import MetricsError, MetricsReader, MetricsSnapshot

COUNTDOWN_FRESH_S = 30.0  # a countdown older than this has no timer behind it any more


@dataclass(frozen=True)
class IdleReading:
    """One look at a server: idle for ``idle_s`` of ``timeout_s``; ``busy`` says why the clock was
    reset (``2 requests in flight``, ``counters moved``, ``not answering``), else None."""

    idle_s: float
    timeout_s: float
    busy: str | None = None

    @property
    def remaining_s(self) -> float:
        """Seconds until the action."""
        return max(0.0, self.timeout_s - self.idle_s)

    @property
    def due(self) -> bool:
        """Idle long enough, with nothing in flight."""
        return self.busy is None and self.idle_s >= self.timeout_s


class IdleClock:
    """How long a server has been idle, from successive ``/metrics`` snapshots (None: no answer)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._counters: dict[str, float] | None = None
        self._since: float | None = None

    def reset(self, now: float) -> None:
        """Start counting again from ``now`` (after a wake)."""
        self._counters, self._since = None, now

    def feed(self, snapshot: MetricsSnapshot | None, now: float) -> IdleReading:
        """Take a scrape taken at ``now`` (monotonic seconds); the reading then."""
        if snapshot is None:
            self.reset(now)
            return IdleReading(0.0, self.timeout_s, "not answering")
        in_flight = int((snapshot.running or 0) + (snapshot.waiting or 0))
        counters = snapshot.counters()
        busy: str | None = None
        if in_flight:
            busy = f"{in_flight} request{'s' if in_flight != 1 else ''} in flight"
        elif self._counters is not None and counters != self._counters:
            busy = "requests served"
        if busy is not None or self._since is None:
            self._since = now
        self._counters = counters
        return IdleReading(now - self._since, self.timeout_s, busy)


def idle_seconds(plan: LaunchPlan) -> float | None:
    """The profile's idle timeout in seconds, or None when it has none."""
    timeout = plan.profile.idle_timeout
    return timeout.minutes * 60 if timeout is not None else None


# ---- the countdown other processes read ---------------------------------------------------------
@dataclass(frozen=True)
class Countdown:
    """What ``status`` shows of an idle timer: ``action`` in ``remaining_s`` (as of ``written_at``)."""

    profile_name: str
    url: str
    action: str
    remaining_s: float
    written_at: float
    busy: str | None = None
    pid: int = 0

    def text(self, now: float | None = None) -> str:
        """``sleeps in 4m 10s (idle)``, or ``idle timer: 1 request in flight``."""
        if self.busy is not None:
            return f"idle timer: {self.busy}"
        left = max(0.0, self.remaining_s - ((now or time.time()) - self.written_at))
        verb = "sleeps" if self.action == "sleep" else "stops"
        return f"{verb} in {duration_text(left)} if idle"


def duration_text(seconds: float) -> str:
    """``4m 10s``, ``12s``, ``1h 5m``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


def countdown_path(profile_name: str) -> Path:
    """Where a server's idle countdown is written."""
    return servers_dir() / f"{server_key(profile_name)}.idle.json"


def write_countdown(countdown: Countdown) -> None:
    """Leave the countdown for ``status`` (a full disk only loses the display)."""
    with contextlib.suppress(OSError):
        path = countdown_path(countdown.profile_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(asdict(countdown)))


def read_countdown(plan: LaunchPlan) -> Countdown | None:
    """The plan's server's countdown when a timer wrote it lately, else None."""
    try:
        data = loads_outside(countdown_path(plan.profile.name).read_text(), "the idle countdown")
        countdown = Countdown(
            profile_name=str(data["profile_name"]),
            url=str(data["url"]),
            action=str(data["action"]),
            remaining_s=float(data["remaining_s"]),
            written_at=float(data["written_at"]),
            busy=str(data["busy"]) if data.get("busy") is not None else None,
            pid=int(data.get("pid") or 0),
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    fresh = time.time() - countdown.written_at < COUNTDOWN_FRESH_S
    return countdown if fresh and countdown.url == plan.base_url else None


def clear_countdown(profile_name: str) -> None:
    """Remove a timer's countdown (it ended)."""
    with contextlib.suppress(OSError):
        countdown_path(profile_name).unlink()


# ---- the timer ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class IdleEvent:
    """What the timer did: ``tick`` (a reading), ``slept``, ``stopped``, ``woke`` (clock reset), or
    ``failed`` (the action was refused: ``detail`` says why)."""

    kind: str
    reading: IdleReading | None = None
    detail: str = ""


def _scrape(reader: MetricsReader) -> MetricsSnapshot | None:
    try:
        return reader.read()
    except MetricsError:
        return None


def _asleep(plan: LaunchPlan) -> bool:
    """The server's own word (``/is_sleeping``); this app's record where it cannot say."""
    if not sleep_enabled(plan):
        return False
    try:
        return is_sleeping(plan.endpoint)
    except SleepError:
        record = read_record(plan)
        return record is not None and record.level is not None


def run_idle_timer(
    plan: LaunchPlan,
    *,
    stop: Callable[[], object],
    emit: Callable[[IdleEvent], None],
    cancel: threading.Event,
    timeout_s: float | None = None,
    interval_s: float = 2.0,
) -> None:
    """Watch the plan's server until ``cancel`` is set (or it was stopped): when it has been idle for
    ``timeout_s`` (the profile's ``idle_timeout`` when None), sleep it (level 1) or call ``stop``, as
    the profile says. After a sleep it keeps watching and starts counting again once the server is
    awake. Raises :class:`DynoError` when the profile has no idle timeout."""
    limit = timeout_s if timeout_s is not None else idle_seconds(plan)
    setting = plan.profile.idle_timeout
    if limit is None or setting is None:
        raise DynoError(
            f"profile '{plan.profile.name}' has no idle_timeout",
            hint="add idle_timeout: {minutes: 30, action: stop} (or action: sleep) to the profile",
        )
    clock = IdleClock(limit)
    reader = MetricsReader(plan.base_url, api_key=plan.endpoint.api_key_or_none())
    sleeping = _asleep(plan)
    try:
        while not cancel.is_set():
            now = time.monotonic()
            if sleeping:
                if not _asleep(plan):
                    sleeping = False
                    clock.reset(now)
                    emit(IdleEvent("woke"))
                clear_countdown(plan.profile.name)
                cancel.wait(interval_s)
                continue
            reading = clock.feed(_scrape(reader), now)
            write_countdown(
                Countdown(
                    plan.profile.name,
                    plan.base_url,
                    setting.action,
                    reading.remaining_s,
                    time.time(),
                    reading.busy,
                    os.getpid(),
                )
            )
            emit(IdleEvent("tick", reading))
            if reading.due:
                # once more, right before acting: a request that arrived since the last look wins
                again = clock.feed(_scrape(reader), time.monotonic())
                if not again.due:
                    emit(IdleEvent("tick", again))
                elif setting.action == "sleep":
                    try:
                        record = sleep_server(plan, 1)
                    except DynoError as exc:
                        emit(IdleEvent("failed", again, exc.message))
                        clock.reset(time.monotonic())
                    else:
                        sleeping = True
                        emit(IdleEvent("slept", again, record.state or ""))
                    clear_countdown(plan.profile.name)
                else:
                    stop()
                    emit(IdleEvent("stopped", again))
                    return
            cancel.wait(interval_s)
    finally:
        reader.close()
        clear_countdown(plan.profile.name)


# ---- what the front ends show ---------------------------------------------------------------------
def shown_state(handle: ServerHandle, started_at: float | None = None) -> str:
    """A server's state as every front end shows it: ``sleeping (level 1)`` while this app has it
    asleep, else its state (``ready``)."""
    state = handle.status.state
    if state is ServerState.READY:
        asleep = sleep_state(handle.plan, started_at if started_at is not None else handle.status.since)
        if asleep is not None:
            return asleep
    return state.value


def idle_text(handle: ServerHandle) -> str:
    """The server's idle countdown (``sleeps in 4m 10s if idle``) when a timer runs, else ``""``."""
    if handle.status.state is not ServerState.READY:
        return ""
    countdown = read_countdown(handle.plan)
    return countdown.text() if countdown is not None else ""


class IdleTimers:
    """The window's idle timers: one thread per followed server whose profile has ``idle_timeout``,
    started once it is ready and ended with it (or :meth:`shutdown`). :meth:`text` is the latest
    countdown of each, for the views."""

    def __init__(self, *, interval_s: float = 2.0) -> None:
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._cancels: dict[str, threading.Event] = {}
        self._latest: dict[str, IdleEvent] = {}

    def follow(self, handle: ServerHandle) -> None:
        """Run the handle's idle timer (a newer handle of the same profile replaces the older's)."""
        if handle.plan.profile.idle_timeout is None:
            return
        cancel = threading.Event()
        with self._lock:
            old = self._cancels.pop(handle.profile_name, None)
            self._cancels[handle.profile_name] = cancel
        if old is not None:
            old.set()
        name = handle.profile_name

        def emit(event: IdleEvent) -> None:
            with self._lock:
                self._latest[name] = event
            if not handle.status.state.is_live:
                cancel.set()

        def run() -> None:
            while not cancel.is_set() and handle.wait_ready(self.interval_s).state is not ServerState.READY:
                if not handle.status.state.is_live:
                    return
            with contextlib.suppress(DynoError):
                run_idle_timer(
                    handle.plan, stop=handle.stop, emit=emit, cancel=cancel, interval_s=self.interval_s
                )

        threading.Thread(target=run, name=f"idle-{name}", daemon=True).start()

    def text(self, name: str) -> str:
        """``sleeps in 4m 10s if idle``, ``idle timer: 1 request in flight``, or ``""``."""
        with self._lock:
            event = self._latest.get(name)
            running = name in self._cancels and not self._cancels[name].is_set()
        if not running or event is None or event.reading is None or event.kind != "tick":
            return ""
        reading = event.reading
        if reading.busy is not None:
            return f"idle timer: {reading.busy}"
        return f"idle: {duration_text(reading.remaining_s)} left"

    def shutdown(self) -> None:
        """End every timer (the window closes; the servers keep running)."""
        with self._lock:
            cancels = list(self._cancels.values())
            self._cancels.clear()
        for cancel in cancels:
            cancel.set()
