"""Spec-decode A/B tab: relaunch the selected profile without, then with, its speculative config,
benchmark each, and show a verdict per prompt ("net gain", "net loss", "within noise").

The A/B job runs in the window's jobs manager (on its profile: refused while another job holds it),
through the window's registry (so the dashboard and the list see both servers); the core stops each
server it started, also on error or cancel, and stores both sides in the history. The profile must not
be running (its port would be taken).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.ab import has_spec_config, verdict_word
from llm_dyno.core.bench.ceiling import roofline_summary
from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, ProgressEvent, ThermalWait
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import ABResult
from llm_dyno.core.jobs.ab_job import ABOutcome, prepare_ab, run_ab
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.ui.jobs_manager import JobsManager, JobState, WhenBusy, profile_resource
from llm_dyno.ui.session import ProfileSession
from llm_dyno.ui.widgets.empty_views import note_when_empty

COLUMNS = ("Prompt", "Without (wall tok/s)", "With (wall tok/s)", "Δ", "Verdict")


def _fmt(v: float | None, spec: str = "{:.1f}") -> str:
    return "—" if v is None else spec.format(v)


class ABPanel(QWidget):
    """Button, status and the verdict table. ``abRequested`` asks the view to start (it knows the suite)."""

    abRequested = Signal()
    abFinished = Signal(object)  # ABResult, once both sides are benchmarked and stored
    stopRequested = Signal(str)  # the running profile the A/B must not run beside (its Stop button)

    def __init__(self, parent: QWidget | None = None, *, jobs: JobsManager | None = None) -> None:
        super().__init__(parent)
        self.jobs = jobs or JobsManager(self)  # the window's; a panel alone makes its own
        self.worker = self.jobs.channel(self)
        self.registry: ServerManager | None = None  # the window's; a panel alone makes its own
        self.result: ABResult | None = None
        self.outcome: ABOutcome | None = None
        self._running_name: str | None = None  # the profile the Stop button stops
        self._profile: Profile | None = None
        self._running = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        row = QHBoxLayout()
        # side A: the profile without its speculative config (the spec-decode A/B), or another profile
        # (a copy's original: llm-dyno ab NAME --against OTHER)
        self.against_box = QComboBox()
        self.against_box.setToolTip("What the selected profile (B) is measured against (A)")
        self.against_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.against_box.setMinimumContentsLength(14)
        self.against_box.currentIndexChanged.connect(
            lambda _i: self.set_profile(self._profile, running=self._running)
        )
        row.addWidget(QLabel("Against"))
        row.addWidget(self.against_box)
        self.session: ProfileSession | None = None  # the window's: the profiles side A may be
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
        self.stop_button = QPushButton()  # shown while the profile runs: what makes the A/B possible
        self.stop_button.setVisible(False)
        self.stop_button.clicked.connect(self._stop_clicked)
        row.addWidget(self.stop_button)
        layout.addLayout(row)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        note_when_empty(
            self.table,
            "Each prompt's wall tok/s without and with speculative decoding shows here once an A/B has run.",
        )
        layout.addWidget(self.table, 1)
        self.details = QLabel("")
        self.details.setObjectName("fieldHint")
        self.details.setWordWrap(True)
        layout.addWidget(self.details)
        self.worker.progressed.connect(self._progress)
        self.worker.finished.connect(self._finished)
        self.worker.failed.connect(self._failed)
        self.jobs.changed.connect(lambda: self.set_profile(self._profile, running=self._running))
        self.set_profile(None)

    @property
    def busy(self) -> bool:
        """Whether an A/B of this panel runs (from start() until its result or failure is shown)."""
        return self.worker.busy

    @property
    def against(self) -> Profile | None:
        """Side A when it is another profile; None: the profile without its speculative config."""
        name = self.against_box.currentData()
        return self.session.get(name) if name and self.session is not None else None

    def set_against(self, name: str | None) -> None:
        """Choose side A: another profile by name, or None for the profile without spec decoding."""
        self._fill_against(name)

    def _fill_against(self, keep: str | None) -> None:
        names = [n for n in (self.session.names() if self.session is not None else [])]
        self.against_box.blockSignals(True)
        self.against_box.clear()
        self.against_box.addItem("itself without spec decoding", None)
        for n in names:
            if self._profile is None or n != self._profile.name:
                self.against_box.addItem(n, n)
        index = self.against_box.findData(keep) if keep else 0
        self.against_box.setCurrentIndex(max(index, 0))
        self.against_box.blockSignals(False)
        self._update(self._profile, self._running)

    def set_profile(self, profile: Profile | None, *, running: bool = False) -> None:
        """Enable the button for a profile with a speculative config (or another profile chosen as side
        A) that is not running and that no other job holds."""
        changed = profile is not None and (self._profile is None or profile.name != self._profile.name)
        self._profile, self._running = profile, running
        if changed or self.against_box.count() == 0:
            self._fill_against(self.against_box.currentData())
        else:
            self._update(profile, running)

    def _update(self, profile: Profile | None, running: bool) -> None:
        holder = self.jobs.holder([profile_resource(profile.name)]) if profile is not None else None
        busy = holder is not None
        against = self.against
        self.run_button.setText("Run A/B" if against is not None else "Run spec-decode A/B")
        reason = None
        if profile is None:
            reason = "Select a profile to A/B its speculative decoding."
        elif against is None and not has_spec_config(profile):
            reason = f"“{profile.name}” has no --speculative-config: nothing to compare."
        elif running:
            reason = f"“{profile.name}” is running: the A/B launches it twice itself, so stop it first."
        if not self.busy and (reason is not None or self.result is None):
            self.status.setText(reason or f"Ready to A/B “{profile.name if profile else ''}”.")
        self.run_button.setEnabled(reason is None and not busy)
        self.cancel_button.setEnabled(self.busy)
        stoppable = profile is not None and running and has_spec_config(profile) and not self.busy
        self._running_name = profile.name if stoppable and profile is not None else None
        self.stop_button.setVisible(stoppable)
        if profile is not None and stoppable:
            self.stop_button.setText(f"Stop “{profile.name}”")
            self.stop_button.setEnabled(True)

    def _stop_clicked(self) -> None:
        if self._running_name is not None:
            self.stop_button.setEnabled(False)
            self.status.setText(f"Stopping “{self._running_name}”…")
            self.stopRequested.emit(self._running_name)

    def start(
        self, profile: Profile, suite: Suite, *, thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT
    ) -> bool:
        """Start the A/B in the jobs manager; False (the reason in the status) when a job holds it."""
        registry = self.registry or ServerManager()

        against = self.against

        def work(emit: Emit, cancel: threading.Event) -> ABOutcome:
            spec = prepare_ab(profile, suite, registry=registry, thermal_wait=thermal_wait, against=against)
            return run_ab(spec, emit, cancel, registry=registry)

        held = [profile_resource(profile.name)] + ([profile_resource(against.name)] if against else [])
        kind = f"A/B against “{against.name}”" if against is not None else "spec-decode A/B"
        job = self.worker.submit(kind, held, work, WhenBusy.REFUSE)
        if job.state is JobState.REFUSED:
            self.status.setText(job.reason or "")
            return False
        self.table.setRowCount(0)
        self.details.clear()
        side_a = f"against “{against.name}”" if against is not None else "without and with spec decoding"
        self.status.setText(f"A/B of “{profile.name}” {side_a}, suite {suite.name}: starting…")
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        return True

    def _progress(self, event: object) -> None:
        if not isinstance(event, ProgressEvent):
            return
        if event.message:
            self.status.setText(event.message)
        elif event.run is not None:
            self.status.setText(f"{event.prompt}: run {event.index} of {event.total} done")

    def _failed(self, message: str) -> None:
        self.cancel_button.setEnabled(False)
        self.run_button.setEnabled(True)
        self.status.setText(message)

    def _finished(self, outcome: ABOutcome) -> None:
        self.outcome = outcome
        self.show_ab(outcome.ab)
        self.abFinished.emit(outcome.ab)

    def show_ab(self, ab: ABResult) -> None:
        """Fill the verdict table from a finished A/B."""
        self.result = ab
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
