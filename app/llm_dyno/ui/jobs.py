"""The one worker type for long jobs in the window: a core job in a thread, its events as Qt signals.

A job is ``work(emit, cancel) -> outcome`` (a core ``prepare_*`` then ``run_*``). ``progressed`` carries each
typed core event, ``finished`` the outcome, ``failed`` a message for the view. A user error (a
:class:`DynoError`) only fails the job; anything else also re-raises in the worker thread, so the error
funnel (``threading.excepthook``) shows it with its traceback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from llm_dyno.core.errors import DynoError
from llm_dyno.ui.messages import window_message

Emit = Callable[[object], None]
Work = Callable[[Emit, threading.Event], object]


class JobRunner(QObject):
    """Runs one job at a time in a daemon thread, with a cancel event the core checks."""

    progressed = Signal(object)  # a core event (ProgressEvent, ResultStored, …)
    finished = Signal(object)  # the job's outcome
    failed = Signal(str)  # why it did not finish (already shown to the user by the view)

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

    def start(self, name: str, work: Work) -> None:
        """Run ``work`` in a worker thread; ``RuntimeError`` when a job is already running."""
        if self.running:
            raise RuntimeError(f"a job is already running; {name} was not started")
        cancel = self._cancel = threading.Event()

        def job() -> None:
            try:
                outcome = work(self.progressed.emit, cancel)
            except DynoError as exc:
                self.failed.emit(window_message(exc))
                return
            except Exception as exc:
                self.failed.emit(f"{name} failed: {type(exc).__name__}: {exc}")
                raise  # to the error funnel, with the traceback
            self.finished.emit(outcome)

        self._thread = threading.Thread(target=job, name=name, daemon=True)
        self._thread.start()
