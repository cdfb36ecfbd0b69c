"""The window's jobs manager: one queue per resource, as Vorta's jobs manager has.

Every long job of the window (a benchmark, load levels, a power-cap sweep, a spec-decode A/B, a tune)
names the resources it holds while it runs: a server (:func:`server_resource`, by its URL), a profile
(:func:`profile_resource`, for jobs that launch it themselves) or the GPUs' power caps
(:data:`GPU_POWER`). One job holds a resource at a time. A job whose resource is held is queued behind
the holder (``WhenBusy.QUEUE``) or refused with the reason (``WhenBusy.REFUSE``), as its kind chooses;
jobs on different resources run side by side. Cancel reaches running and queued jobs; closing the window
cancels all and waits for them with a deadline (:meth:`JobsManager.shutdown`).

A view talks to the manager through its :class:`JobChannel`: its jobs' events, outcomes and failures come
back on the channel's signals, in the GUI thread, after the manager has marked the job ended (so a view
that asks "is my target busy?" from its slot gets the answer of after the job).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from enum import Enum

from PySide6.QtCore import QObject, Qt, Signal

from llm_dyno.ui.jobs import Work, run_task

GPU_POWER = "the GPU power caps"


def server_resource(url: str) -> str:
    """The resource a job against the server at ``url`` holds (the same server, whatever its path)."""
    return f"the server at {url.rstrip('/')}"


def profile_resource(name: str) -> str:
    """The resource a job that launches profile ``name`` itself holds (its port, its GPUs)."""
    return f"profile “{name}”"


class WhenBusy(Enum):
    """What a job does when one of its resources is held: wait its turn, or not start at all."""

    QUEUE = "queue"
    REFUSE = "refuse"


class JobState(Enum):
    """Where a job stands."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"  # finished or failed (its channel said which)
    WITHDRAWN = "withdrawn"  # cancelled while it waited: it never ran
    REFUSED = "refused"  # its resource was held and its kind does not queue


class Job:
    """One submitted job: its name, the resources it holds, its state and (queued or refused) why."""

    def __init__(
        self,
        name: str,
        resources: Sequence[str],
        work: Work,
        channel: JobChannel,
        on_start: Callable[[], None],
    ) -> None:
        if not resources:
            raise ValueError(f"job {name!r} names no resource: say which server, profile or GPU it holds")
        self.name = name
        self.resources = tuple(resources)
        self.state = JobState.QUEUED
        self.reason: str | None = None
        self.work = work
        self.channel = channel
        self.on_start = on_start
        self.cancel_event = threading.Event()
        self.thread: threading.Thread | None = None

    def describe(self) -> str:
        """``benchmark on the server at http://…``: the job in the user's words."""
        return f"{self.name} on {self.resources[0]}"


class JobsManager(QObject):
    """Runs the window's jobs, one per resource at a time; ``changed`` when one starts, queues or ends."""

    changed = Signal()
    _ended = Signal(object, object, object)  # job, outcome, failure message (from the job's thread)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._jobs: list[Job] = []  # queued and running, in the order they were submitted
        self._closed = False
        self._ended.connect(self._on_ended, Qt.ConnectionType.QueuedConnection)

    def channel(self, parent: QObject | None = None) -> JobChannel:
        """A view's line to the manager (its jobs' signals come back on it)."""
        return JobChannel(self, parent)

    @property
    def jobs(self) -> list[Job]:
        """The queued and running jobs, in submission order."""
        return list(self._jobs)

    def holder(self, resources: Sequence[str]) -> Job | None:
        """The first queued or running job that holds or waits for one of ``resources``."""
        return next((j for j in self._jobs if set(j.resources) & set(resources)), None)

    def submit(self, job: Job, when_busy: WhenBusy) -> Job:
        """Start ``job`` now, queue it behind the job holding its resource, or refuse it (``job.reason``)."""
        if self._closed:
            job.state, job.reason = JobState.REFUSED, f"{job.name} was not started: the window is closing"
            return job
        ahead = self.holder(job.resources)
        if ahead is not None and when_busy is WhenBusy.REFUSE:
            job.state = JobState.REFUSED
            job.reason = (
                f"{job.name} was not started: {ahead.describe()} is {ahead.state.value}; "
                "wait for it or cancel it"
            )
            return job
        self._jobs.append(job)
        if ahead is not None:
            job.reason = f"queued behind {ahead.describe()}"
        else:
            self._start(job)
        self._changed(job.channel)
        return job

    def cancel(self, job: Job) -> None:
        """Ask a running job to stop (the core checks between chunks); withdraw a queued one."""
        job.cancel_event.set()
        if job.state is JobState.QUEUED and job in self._jobs:
            self._jobs.remove(job)
            job.state, job.reason = JobState.WITHDRAWN, f"{job.name} cancelled before it started"
            job.channel.withdrawn.emit(job.reason)
            self._schedule()
            self._changed(job.channel)

    def shutdown(self, deadline_s: float = 15.0) -> list[str]:
        """Cancel every job and wait for the running ones, at most ``deadline_s`` in all; the names of
        those still running at the deadline (their threads are daemons: they end with the process)."""
        self._closed = True
        for job in reversed(self._jobs):
            self.cancel(job)
        end = time.monotonic() + deadline_s
        for job in list(self._jobs):
            if job.thread is not None:
                job.thread.join(max(0.0, end - time.monotonic()))
        return [j.describe() for j in self._jobs if j.thread is not None and j.thread.is_alive()]

    def wait(self, jobs: Sequence[Job], timeout: float | None = None) -> None:
        """Join the threads of ``jobs`` (tests, shutdown)."""
        for job in jobs:
            if job.thread is not None:
                job.thread.join(timeout)

    # ---- inside ----------------------------------------------------------------------------------
    def _start(self, job: Job) -> None:
        job.state, job.reason = JobState.RUNNING, None
        job.on_start()
        outcome: list[object] = []

        def body() -> None:
            outcome.append(job.work(job.channel.progressed.emit, job.cancel_event))
            self._ended.emit(job, outcome[0], None)

        job.thread = run_task(job.name, body, lambda message: self._ended.emit(job, None, message))

    def _on_ended(self, job: Job, outcome: object, message: object) -> None:
        if job in self._jobs:
            self._jobs.remove(job)
        job.state = JobState.DONE
        if job.thread is not None:
            job.thread.join(2.0)  # it ends right after posting this
        self._changed(job.channel)  # the views see the resource free before they show the outcome
        if isinstance(message, str):
            job.channel.failed.emit(message)
        else:
            job.channel.finished.emit(outcome)
        self._schedule()

    def _schedule(self) -> None:
        """Start each queued job whose resources no earlier job holds or waits for (first come, first run)."""
        if self._closed:
            return
        for i, job in enumerate(self._jobs):
            if job.state is JobState.QUEUED:
                ahead = next((j for j in self._jobs[:i] if set(j.resources) & set(job.resources)), None)
                if ahead is None:
                    self._start(job)
                    self._changed(job.channel)
                else:
                    job.reason = f"queued behind {ahead.describe()}"

    def _changed(self, channel: JobChannel) -> None:
        channel.changed.emit()
        self.changed.emit()


class JobChannel(QObject):
    """A view's jobs: submit, cancel, and their signals (``progressed`` a core event, ``finished`` an
    outcome, ``failed`` a message, ``withdrawn`` a queued job cancelled, ``changed`` any state change)."""

    progressed = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    withdrawn = Signal(str)
    changed = Signal()

    def __init__(self, manager: JobsManager, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self._submitted: list[Job] = []  # also the ended ones, whose threads wait() joins

    def submit(
        self,
        name: str,
        resources: Sequence[str],
        work: Work,
        when_busy: WhenBusy,
        on_start: Callable[[], None] = lambda: None,
    ) -> Job:
        """Hand ``work`` to the manager (see :meth:`JobsManager.submit`); ``on_start`` runs when it starts."""
        job = self.manager.submit(Job(name, resources, work, self, on_start), when_busy)
        self._submitted = [j for j in self._submitted if j.thread is None or j.thread.is_alive()] + [job]
        return job

    @property
    def jobs(self) -> list[Job]:
        """This channel's queued and running jobs."""
        return [j for j in self.manager.jobs if j.channel is self]

    @property
    def running(self) -> bool:
        """Whether one of this channel's jobs runs."""
        return any(j.state is JobState.RUNNING for j in self.jobs)

    @property
    def busy(self) -> bool:
        """Whether one of this channel's jobs runs or waits."""
        return bool(self.jobs)

    def cancel(self) -> None:
        """Cancel this channel's jobs, queued ones first (so none starts when the running one ends)."""
        for job in sorted(self.jobs, key=lambda j: j.state is JobState.RUNNING):
            self.manager.cancel(job)

    def wait(self, timeout: float | None = None) -> None:
        """Join this channel's job threads, also those that just ended (tests)."""
        self.manager.wait(self._submitted, timeout)
