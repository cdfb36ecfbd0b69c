"""Help → Check system…: the doctor's checks, each with its finding and the steps that fix it.

The checks talk to Docker and NVML, so they run in a worker thread; the dialog shows "Checking…"
until the report arrives. "Copy report" puts the plain-text report on the clipboard.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.doctor import (
    CPU_DEMO_PROFILE,
    DEMO_SETUP,
    DoctorReport,
    Level,
    recommendation,
    run_checks,
)
from llm_dyno.ui import theme
from llm_dyno.ui.dialogs.demo_setup import DemoSetupDialog
from llm_dyno.ui.jobs import run_task

WINDOW_DEMO_SETUP = "the “Set up the CPU demo” button below"


def _window_words(text: str) -> str:
    """The report's text as the dialog says it: its own button, not Help → … or a command line."""
    return text.replace(DEMO_SETUP, WINDOW_DEMO_SETUP)


def report_html(report: DoctorReport) -> str:
    """The report as rich text for the dialog (in the window's words; Copy report keeps the terminal's)."""
    c = theme.colors()
    colour = {Level.OK: c.green, Level.WARNING: c.amber, Level.ERROR: c.red}
    word = {Level.OK: "OK", Level.WARNING: "Warning", Level.ERROR: "Problem"}
    parts = []
    if report.recommend_cpu_demo:  # the one thing that works here, first
        parts.append(f"<p><b>{escape(_window_words(recommendation(report)))}</b></p>")
    for check in report.checks:
        parts.append(
            f"<p style='margin-bottom:2px'><b style='color:{colour[check.level]}'>{word[check.level]}</b> "
            f"&nbsp;<b>{escape(check.title)}</b><br>{escape(_window_words(check.finding))}</p>"
        )
        if check.steps:
            items = "".join(f"<li><code>{escape(_window_words(s))}</code></li>" for s in check.steps)
            parts.append(f"<ol style='margin-top:0'>{items}</ol>")
    return "".join(parts)


class _Worker(QObject):
    done = Signal(object)  # DoctorReport
    failed = Signal(str)  # the checks themselves broke (a bug: the funnel shows its traceback too)


class DoctorDialog(QDialog):
    """Runs the checks when shown (and on Re-check)."""

    def __init__(self, parent: QWidget | None = None, host: str | None = None, *, start: bool = True) -> None:
        super().__init__(parent)
        self.setWindowTitle("Check system")
        self.resize(720, 520)
        self.host = host
        self.report: DoctorReport | None = None
        layout = QVBoxLayout(self)
        title = QLabel("Can this machine serve vLLM?")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        self.summary = QLabel("Checking…")
        self.summary.setObjectName("sectionSubtitle")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.view = QTextBrowser()
        self.view.setOpenExternalLinks(False)
        self.view.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        layout.addWidget(self.view, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.recheck = buttons.addButton("Check again", QDialogButtonBox.ButtonRole.ActionRole)
        self.recheck.clicked.connect(self.start)
        self.copy = buttons.addButton("Copy report", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy.clicked.connect(self._copy)
        self.copy.setEnabled(False)
        # Offered when there is no GPU: the one thing that works here (set up, or select, cpu-demo)
        self.setup_demo = buttons.addButton("Set up the CPU demo", QDialogButtonBox.ButtonRole.ActionRole)
        self.setup_demo.setObjectName("primaryButton")
        self.setup_demo.setVisible(False)
        self.setup_demo.clicked.connect(self.use_cpu_demo)
        self.demo_dialog: DemoSetupDialog | None = None
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._worker = _Worker(self)
        self._worker.done.connect(self.show_report)
        self._worker.failed.connect(self.show_failure)
        if start:
            self.start()

    def start(self) -> None:
        """Run the checks in a worker thread."""
        self.recheck.setEnabled(False)
        self.summary.setText("Checking Docker, the NVIDIA runtime, GPUs and vLLM…")
        host, worker = self.host, self._worker

        def job() -> None:
            worker.done.emit(run_checks(host))

        run_task("the system check", job, worker.failed.emit)

    def show_failure(self, message: str) -> None:
        """Say that the checks could not finish, and offer Re-check (the dialog never waits forever)."""
        self.recheck.setEnabled(True)
        self.summary.setText(f"The checks did not finish: {message}")

    def show_report(self, report: DoctorReport) -> None:
        """Show a finished report."""
        self.report = report
        self.recheck.setEnabled(True)
        self.copy.setEnabled(True)
        self.summary.setText(report.summary())
        self.view.setHtml(report_html(report))
        self.setup_demo.setVisible(report.recommend_cpu_demo)
        self.setup_demo.setText("Use the CPU demo" if report.cpu_demo_ready else "Set up the CPU demo")

    def use_cpu_demo(self) -> None:
        """Set up the CPU demo in a progress dialog (or, when it is set up, just select it)."""
        if self.report is not None and self.report.cpu_demo_ready:
            self._select_demo(CPU_DEMO_PROFILE)
            self.accept()
            return
        dialog = DemoSetupDialog(self)
        dialog.ready.connect(self._select_demo)  # the window shows it behind the "Ready" message
        dialog.accepted.connect(lambda: self._after_setup(dialog))
        self.demo_dialog = dialog
        dialog.open()

    def _after_setup(self, dialog: DemoSetupDialog) -> None:
        """The setup dialog was closed after success: close this one too, and launch when asked to."""
        self.accept()
        if dialog.launch_now:
            launch = getattr(getattr(self.parent(), "actions_", None), "launch", None)
            if launch is not None and launch.isEnabled():
                launch.trigger()

    def _select_demo(self, name: str) -> None:
        """Show the filled-in profile in the window, ready to Launch."""
        window = self.parent()
        session = getattr(window, "session", None)
        if session is not None:
            session.reload()
        select = getattr(window, "select_profile", None)
        if callable(select):
            select(name)
        status = getattr(window, "statusBar", None)
        if callable(status):  # kept until the next message: the user may read it after closing the dialogs
            status().showMessage(f"The CPU demo is ready: “{name}” is selected, click Launch to serve it")

    def _copy(self) -> None:
        if self.report is not None:
            QGuiApplication.clipboard().setText(self.report.render_text())


def schedule_system_check(window: QWidget, after: Callable[[Any], None]) -> None:
    """On the first run, show the system check once the first-run dialog (``after``) is done.

    ``after(window)`` schedules the first-run dialog when it applies; the check waits until no modal
    dialog is open, so that the two come one after the other, not on top of each other.
    """
    session = getattr(window, "session", None)
    first = session is not None and session.store.is_first_run()
    after(window)
    if not first:
        return

    def show_when_free() -> None:
        if QApplication.activeModalWidget() is not None:
            QTimer.singleShot(300, show_when_free)
            return
        DoctorDialog(window).exec()

    QTimer.singleShot(300, show_when_free)
