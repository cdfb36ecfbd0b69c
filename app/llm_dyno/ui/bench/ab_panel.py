"""Spec-decode A/B tab: relaunch the selected profile without, then with, its speculative config,
benchmark each, and show a verdict per prompt ("net gain", "net loss", "within noise").

The job runs in a worker thread (:class:`ABWorker`); the core stops each server it started, also on
error or cancel. The profile must not be running (its port would be taken).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.ab import has_spec_config, run_spec_ab, verdict_word
from llm_dyno.core.bench.ceiling import roofline_summary
from llm_dyno.core.bench.runner import ProgressEvent
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import ABResult
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.ui.bench.worker import JobWorker

COLUMNS = ("Prompt", "Without (wall tok/s)", "With (wall tok/s)", "Δ", "Verdict")


class ABWorker(JobWorker):
    """Runs one A/B at a time in a thread; emits ``progress``, then ``finished`` or ``failed``."""

    progress = Signal(object)  # ProgressEvent
    finished = Signal(object)  # ABResult

    def start(self, profile: Profile, suite: Suite, manager: ServerManager | None = None) -> None:
        """Run the A/B of ``profile`` with ``suite`` in a worker thread."""

        def job() -> None:
            try:
                ab = run_spec_ab(profile, suite, manager, self.progress.emit, self._cancel)
            except DynoError as exc:
                self.failed.emit(str(exc))
                return
            except Exception as exc:  # a bug must not take the GUI down
                self.failed.emit(f"A/B failed: {type(exc).__name__}: {exc}")
                return
            self.finished.emit(ab)

        self._start(job, "bench-ab")


def _fmt(v: float | None, spec: str = "{:.1f}") -> str:
    return "—" if v is None else spec.format(v)


class ABPanel(QWidget):
    """Button, status and the verdict table. ``abRequested`` asks the view to start (it knows the suite)."""

    abRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.worker = ABWorker(self)
        self.result: ABResult | None = None
        self.busy = False  # from start() until the result (or the failure) is shown
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        row = QHBoxLayout()
        self.run_button = QPushButton("Run spec-decode A/B")
        self.run_button.setObjectName("primaryButton")
        self.run_button.setToolTip(
            "Launch the profile without its --speculative-config, benchmark it, stop it; then the same "
            "with it. The profile must not be running."
        )
        self.run_button.clicked.connect(self.abRequested)
        row.addWidget(self.run_button)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.worker.cancel)
        row.addWidget(self.cancel_button)
        self.status = QLabel("")
        self.status.setObjectName("sectionSubtitle")
        self.status.setWordWrap(True)
        row.addWidget(self.status, 1)
        layout.addLayout(row)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.table, 1)
        self.details = QLabel("")
        self.details.setObjectName("fieldHint")
        self.details.setWordWrap(True)
        layout.addWidget(self.details)
        self.worker.progress.connect(self._progress)
        self.worker.finished.connect(self.show_ab)
        self.worker.failed.connect(self._failed)
        self.set_profile(None)

    def set_profile(self, profile: Profile | None, *, running: bool = False, busy: bool = False) -> None:
        """Enable the button for a profile with a speculative config that is not running."""
        reason = None
        if profile is None:
            reason = "Select a profile to A/B its speculative decoding."
        elif not has_spec_config(profile):
            reason = f"“{profile.name}” has no --speculative-config: nothing to compare."
        elif running:
            reason = f"Stop “{profile.name}” first: the A/B launches it twice itself."
        if not self.busy and (reason is not None or self.result is None):
            self.status.setText(reason or f"Ready to A/B “{profile.name if profile else ''}”.")
        self.run_button.setEnabled(reason is None and not busy and not self.busy)

    def start(self, profile: Profile, suite: Suite, manager: ServerManager | None = None) -> bool:
        """Start the A/B in the worker; False when one is already running."""
        if self.busy or self.worker.running:
            return False
        self.busy = True
        self.table.setRowCount(0)
        self.details.clear()
        self.status.setText(f"A/B of “{profile.name}” with suite {suite.name}: starting…")
        self.worker.start(profile, suite, manager)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        return True

    def _progress(self, event: ProgressEvent) -> None:
        if event.message:
            self.status.setText(event.message)
        elif event.run is not None:
            self.status.setText(f"{event.prompt}: run {event.index} of {event.total} done")

    def _failed(self, message: str) -> None:
        self.busy = False
        self.cancel_button.setEnabled(False)
        self.run_button.setEnabled(True)
        self.status.setText(message)

    def show_ab(self, ab: ABResult) -> None:
        """Fill the verdict table from a finished A/B."""
        self.result = ab
        self.busy = False
        self.cancel_button.setEnabled(False)
        self.run_button.setEnabled(True)
        self.table.setRowCount(0)
        for prompt, c in ab.verdicts:
            row = self.table.rowCount()
            self.table.insertRow(row)
            cells = (
                prompt,
                _fmt(c.baseline_mean),
                _fmt(c.candidate_mean),
                _fmt(c.delta_pct, "{:+.1f} %"),
                verdict_word(ab, prompt),
            )
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if 0 < col < 4:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if col == 4:
                    item.setToolTip(c.rule)
                self.table.setItem(row, col, item)
        errors = [r.error for r in (ab.without_spec, ab.with_spec) if r.error]
        self.status.setText("A/B done" + (f" with errors: {'; '.join(errors)}" if errors else ""))
        self.details.setText(
            f"Without: {roofline_summary(ab.without_spec)}\nWith: {roofline_summary(ab.with_spec)}"
        )

    def verdict_texts(self) -> list[str]:
        """The Verdict column (for tests)."""
        return [self.table.item(r, 4).text() for r in range(self.table.rowCount())]
