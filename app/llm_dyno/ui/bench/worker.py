"""Benchmark and sweep jobs in worker threads; their core progress events re-emitted as Qt signals.

Every callback here runs in the worker thread and only emits a signal (queued to the GUI thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from llm_dyno.core.bench.ceiling import attach_roofline_for
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.session import run_benchmark
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import PowerController, run_sweep
from llm_dyno.core.profiles.model import Profile


@dataclass(frozen=True)
class BenchTarget:
    """The server a benchmark runs against: URL, served model name and the profile (None when attached)."""

    url: str
    model: str
    profile: Profile | None = None

    def describe(self) -> str:
        """``cpu-demo · tiny at http://127.0.0.1:8011``."""
        who = f"{self.profile.name} · " if self.profile is not None else ""
        return f"{who}{self.model} at {self.url}"


class JobWorker(QObject):
    """One job at a time in a daemon thread, with a cancel event the core checks; subclasses emit."""

    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether a job is in progress."""
        return self._thread is not None and self._thread.is_alive()

    def cancel(self) -> None:
        """Ask the job to stop (the core checks between chunks and runs, and stops what it started)."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> None:
        """Join the worker thread (tests, shutdown)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _start(self, job: Callable[[], None], name: str) -> None:
        if self.running:
            raise RuntimeError(f"a {name} job is already running")
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=job, name=name, daemon=True)
        self._thread.start()


class BenchWorker(JobWorker):
    """Runs one suite (or sweep) at a time: ``progress`` per event, then ``finished`` / ``sweepFinished``."""

    progress = Signal(object)  # ProgressEvent
    message = Signal(str)
    finished = Signal(object)  # BenchResult
    sweepFinished = Signal(object)  # SweepResult

    def _run_suite(self, target: BenchTarget, suite: Suite) -> BenchResult:
        result = run_benchmark(
            target.url,
            target.model,
            suite,
            profile=target.profile,
            progress=self.progress.emit,
            cancel=self._cancel,
        )
        attach_roofline_for(result, target.profile)  # the decode ceiling, when model size and GPU are known
        return result

    def start(self, target: BenchTarget, suite: Suite) -> None:
        """Benchmark ``target`` with ``suite`` in a worker thread."""

        def job() -> None:
            try:
                result = self._run_suite(target, suite)
            except Exception as exc:  # a bug or an unexpected client error: tell the user, keep the GUI
                self.failed.emit(f"benchmark failed: {exc}")
                return
            self.finished.emit(result)

        self._start(job, "bench")

    def start_sweep(
        self, target: BenchTarget, suite: Suite, caps: list[float], power: PowerController
    ) -> None:
        """Benchmark at each cap (the original limit is restored by the core afterwards)."""

        def job() -> None:
            try:
                sweep = run_sweep(
                    caps,
                    power,
                    lambda _cap: self._run_suite(target, suite),
                    cancel=self._cancel,
                    progress=self.message.emit,
                )
            except Exception as exc:
                self.failed.emit(f"sweep failed: {exc}")
                return
            self.sweepFinished.emit(sweep)

        self._start(job, "sweep")
