"""The Tune view: pick a recipe or knobs and their values, run the tune on the selected profile in a
worker (progress, cancel), see TPS and tokens/J against the knob with the knee, TPS against watts with
the Pareto front, and the recommendation; apply it to a copy of the profile, or export the tune."""

from __future__ import annotations

import html
import threading
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, EventKind, ProgressEvent
from llm_dyno.core.bench.suite import load_suite
from llm_dyno.core.errors import DynoError, Fix
from llm_dyno.core.exports.registry import RESULT_EXPORTS, ResultKind, TuneResult, formats_for, write_result
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.tune_job import run_tune
from llm_dyno.core.jobs.tune_spec import DEFAULT_REPEATS, MAX_REPEATS, TuneSpec, prepare_tune
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.runtime.memory import serves_without_gpu
from llm_dyno.core.tune import export
from llm_dyno.core.tune.analysis import TuneAnalysis, analyse, profile_values
from llm_dyno.core.tune.apply import save_tuned_copy
from llm_dyno.core.tune.recipes import RECIPES
from llm_dyno.core.tune.record import TrialFinished, TrialStarted, TuneMessage, TuneRecord
from llm_dyno.ui.jobs_manager import GPU_POWER, JobsManager, JobState, WhenBusy, profile_resource
from llm_dyno.ui.messages import fix_button, window_message
from llm_dyno.ui.session import ProfileSession
from llm_dyno.ui.tune.charts import KnobChart, ParetoChart
from llm_dyno.ui.tune.knob_rows import NO_GPU, fill_recipes, knob_choices, knob_tip, row_vary

NO_RECIPE = "(knobs below)"


class TuneView(QWidget):
    """Tune the selected profile. ``tune_finished(summary)`` when a tune ends."""

    tune_finished = Signal(str)
    statusMessage = Signal(str)
    errorMessage = Signal(str)
    copyCreated = Signal(str)
    stopRequested = Signal(str)  # the profile whose server must stop before this tune can run

    def __init__(
        self,
        session: ProfileSession | None = None,
        registry: ServerManager | None = None,
        parent: QWidget | None = None,
        jobs: JobsManager | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session or ProfileSession(parent=self)
        self.jobs = jobs or JobsManager(self)  # the window's: a tune holds its profile and the GPU caps
        self.registry = registry or ServerManager()
        self.profile: Profile | None = None
        self.spec: TuneSpec | None = None
        self.record: TuneRecord | None = None
        self.analysis: TuneAnalysis | None = None
        self.worker = self.jobs.channel(self)
        self.worker.progressed.connect(self._progress)
        self.worker.finished.connect(self._finished)
        self.worker.failed.connect(self._failed)
        self.jobs.changed.connect(self._update)
        self._build()
        self._update()

    # ---- building ------------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        self.target_label = QLabel()
        self.target_label.setObjectName("sectionSubtitle")
        layout.addWidget(self.target_label)
        grid = QGridLayout()
        grid.addWidget(QLabel("Recipe"), 0, 0)
        self.recipe_combo = QComboBox()
        self.recipe_combo.addItems([NO_RECIPE, *sorted(RECIPES)])
        self.recipe_combo.setToolTip(
            "A built-in tune: its knob and values are chosen from the profile and GPU"
        )
        fill_recipes(self.recipe_combo, gpu_less=False)
        grid.addWidget(self.recipe_combo, 0, 1)
        grid.addWidget(QLabel("Suite"), 0, 2)
        self.suite_edit = QLineEdit("community")
        self.suite_edit.setToolTip("A suite name or file; every trial runs it")
        grid.addWidget(self.suite_edit, 0, 3)
        grid.addWidget(QLabel("Repeats"), 0, 4)
        self.repeats_spin = QSpinBox()
        self.repeats_spin.setRange(1, MAX_REPEATS)
        self.repeats_spin.setValue(DEFAULT_REPEATS)
        self.repeats_spin.setToolTip(
            "Each trial runs this often, interleaved (A B C A B C …); fewer than 3 cannot tell a "
            "difference from the machine's noise"
        )
        grid.addWidget(self.repeats_spin, 0, 5)
        self.knob_combos: list[QComboBox] = []
        self.value_edits: list[QLineEdit] = []
        for n in (1, 2):
            grid.addWidget(QLabel(f"Knob {n}"), n, 0)
            combo = QComboBox()
            combo.setEditable(True)
            combo.addItems(["", *knob_choices(gpu_less=False)])
            combo.setToolTip(knob_tip(gpu_less=False))
            grid.addWidget(combo, n, 1)
            grid.addWidget(QLabel("Values"), n, 2)
            values = QLineEdit()
            values.setPlaceholderText("e.g. 1, 2, 3")
            grid.addWidget(values, n, 3, 1, 3)
            self.knob_combos.append(combo)
            self.value_edits.append(values)
        grid.setColumnStretch(3, 1)
        layout.addLayout(grid)
        row = QHBoxLayout()
        self.thermal_check = QCheckBox("Wait for a stable GPU temperature")
        self.thermal_check.setChecked(True)
        row.addWidget(self.thermal_check)
        row.addStretch(1)
        self.run_button = QPushButton("Run tune")
        self.run_button.setObjectName("primaryButton")
        self.run_button.clicked.connect(self.start)
        row.addWidget(self.run_button)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.progress = QProgressBar()
        self.progress.setTextVisible(False)
        layout.addWidget(self.progress)
        status_row = QHBoxLayout()
        self.status = QLabel("")
        self.status.setWordWrap(True)
        status_row.addWidget(self.status, 1)
        self.fix_button = QPushButton()  # the button that fixes the refusal shown, when there is one
        self.fix_button.setVisible(False)
        self.fix_button.clicked.connect(self._fix_clicked)
        status_row.addWidget(self.fix_button)
        layout.addLayout(status_row)
        self._fix_subject: str | None = None
        split = QSplitter()
        self.knob_chart = KnobChart()
        self.pareto_chart = ParetoChart()
        split.addWidget(self.knob_chart)
        split.addWidget(self.pareto_chart)
        layout.addWidget(split, 3)
        bottom = QSplitter()
        self.recommendation = QLabel("Run a tune to see its knee, its Pareto front and a recommendation.")
        self.recommendation.setWordWrap(True)
        self.recommendation.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.recommendation.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.recommendation)
        bottom.addWidget(scroll)
        self.table = QPlainTextEdit()
        self.table.setReadOnly(True)
        self.table.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.table.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.table.setPlaceholderText("The trials as a Markdown table and the post row, ready to paste.")
        bottom.addWidget(self.table)
        bottom.setSizes([440, 520])  # the recommendation reads in lines, not a column of words
        layout.addWidget(bottom, 2)
        buttons = QHBoxLayout()
        self.apply_button = QPushButton("Apply to a copy of the profile")
        self.apply_button.clicked.connect(self.apply_to_copy)
        buttons.addWidget(self.apply_button)
        buttons.addStretch(1)
        # the formats are the result-export registry's for a tune; the chart image is the window's own
        self.export_button = QPushButton("Export")
        menu = QMenu(self.export_button)
        self.export_actions = {
            name: menu.addAction(f"{fmt.title}…", partial(self._export_clicked, name))
            for name, fmt in formats_for(ResultKind.TUNE).items()
        }
        self.export_actions["png"] = menu.addAction("Charts as PNG…", lambda: self._export_clicked("png"))
        self.export_button.setMenu(menu)
        self.copy_post_button = QPushButton("Copy post row")
        self.copy_post_button.clicked.connect(self.copy_post_row)
        self.export_buttons = {"export": self.export_button, "post": self.copy_post_button}
        for button in self.export_buttons.values():
            buttons.addWidget(button)
        layout.addLayout(buttons)

    # ---- target --------------------------------------------------------------------------------
    def set_target(self, profile: Profile | None, url: str | None = None) -> None:
        """The selected profile (the tune launches its variants itself; ``url`` is ignored). A profile
        without a GPU is offered no GPU knobs and no wait for a GPU temperature, each saying why."""
        changed = profile is None or self.profile is None or profile.name != self.profile.name
        self.profile = profile
        gpu_less = profile is not None and serves_without_gpu(profile)
        if not changed and gpu_less == (not self.thermal_check.isEnabled()):
            self._update()  # the same profile again (a status change): the user's choices stay
            return
        why = NO_GPU
        self.thermal_check.setEnabled(not gpu_less)
        self.thermal_check.setChecked(not gpu_less)
        self.thermal_check.setToolTip(
            f"{why}: no GPU temperature to wait for" if gpu_less else
            "Before each trial, wait until the GPU's temperature is steady (heat changes clocks and speed)"
        )  # fmt: skip
        for combo in self.knob_combos:
            text = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(["", *knob_choices(gpu_less)])
            combo.setEditText(text)
            combo.blockSignals(False)
            combo.setToolTip(knob_tip(gpu_less))
        fill_recipes(self.recipe_combo, gpu_less)
        self.pareto_chart.no_gpu = why if gpu_less else None
        if self.record is None:
            self.pareto_chart.set_tune(None, None)
        self._update()

    def _update(self) -> None:
        busy = self.worker.running
        if self.profile is None:
            self.target_label.setText("Select a profile to tune: each trial is a variant of it.")
        else:
            self.target_label.setText(f"Tuning “{self.profile.name}”: every trial launches a variant of it")
        self.run_button.setEnabled(self.profile is not None and not busy)
        self.cancel_button.setEnabled(busy)
        done = self.analysis is not None and self.analysis.recommendation is not None
        self.apply_button.setEnabled(
            done and not busy and self.spec is not None and self.spec.profile is not None
        )
        for button in self.export_buttons.values():
            button.setEnabled(self.record is not None and not busy)

    # ---- running -------------------------------------------------------------------------------
    def start(self) -> bool:
        """Prepare the tune (refusals shown at once) and run it in the worker; False when nothing started."""
        if self.profile is None or self.worker.busy:
            return False
        resources = [profile_resource(self.profile.name), GPU_POWER]
        if (holder := self.jobs.holder(resources)) is not None:
            self.status.setText(f"tune was not started: {holder.describe()} is {holder.state.value}")
            return False
        try:
            varies = tuple(
                row_vary(n, combo.currentText().strip(), values.text())
                for n, (combo, values) in enumerate(zip(self.knob_combos, self.value_edits, strict=True), 1)
                if combo.currentText().strip()
            )
            recipe = self.recipe_combo.currentText()
            spec = prepare_tune(
                self.profile, varies, load_suite(self.suite_edit.text().strip() or "community"),
                recipe=None if recipe == NO_RECIPE else recipe, registry=self.registry,
                repeats=self.repeats_spin.value(),
                thermal_wait=DEFAULT_THERMAL_WAIT if self.thermal_check.isChecked() else None,
            )  # fmt: skip
        except DynoError as exc:
            self._refused(exc)  # said once, here, beside the button that fixes it
            return False
        registry = self.registry

        def work(emit: Emit, cancel: threading.Event) -> TuneRecord:
            return run_tune(spec, emit, cancel, registry=registry)

        job = self.worker.submit("tune", resources, work, WhenBusy.REFUSE)
        if job.state is JobState.REFUSED:
            self.status.setText(job.reason or "")
            return False
        self._set_fix(None)
        self.spec, self.record, self.analysis = spec, None, None
        self._total = len(spec.trials) * spec.repeats
        self.progress.setRange(0, self._total)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.status.setText(f"Starting {len(spec.trials)} trials × {spec.repeats} repeats…")
        self.table.setPlainText("")
        self._update()
        return True

    def _refused(self, exc: DynoError) -> None:
        self.status.setText(window_message(exc))
        if exc.fix is Fix.CHOOSE_KNOBS:
            self.knob_combos[0].setFocus()
        self._set_fix(exc.subject if exc.fix is Fix.STOP_SERVER else None, fix_button(exc))

    def _set_fix(self, subject: str | None, label: str | None = None) -> None:
        self._fix_subject = subject
        self.fix_button.setVisible(subject is not None and label is not None)
        self.fix_button.setEnabled(True)
        if label:
            self.fix_button.setText(label)
            self.fix_button.setMinimumWidth(self.fix_button.sizeHint().width())  # never squeezed by the text
        self.layout().activate()  # laid out now: the button shows whole at once, beside the wrapped text

    def _fix_clicked(self) -> None:
        if self._fix_subject is None:
            return
        self.fix_button.setEnabled(False)
        self.status.setText(f"Stopping “{self._fix_subject}”…")
        self.stopRequested.emit(self._fix_subject)

    def server_stopped(self, name: str) -> None:
        """A server stopped: when this view asked for it, say the tune can run now."""
        if name == self._fix_subject:
            self._set_fix(None)
            self.status.setText(f"“{name}” stopped: Run tune launches each variant itself")

    def cancel(self) -> None:
        """Stop after the current request; the server is stopped and the GPU restored."""
        self.worker.cancel()
        self.status.setText("Cancelling…")

    def _progress(self, event: object) -> None:
        if isinstance(event, TrialStarted):
            spec = self.spec
            trials, repeats = (len(spec.trials), spec.repeats) if spec is not None else (event.total, 1)
            self.status.setText(
                f"Trial {event.trial.index} of {trials} ({event.trial.label}), repeat {event.repeat} of "
                f"{repeats}: benchmark {event.position} of {event.total}"
            )
        elif isinstance(event, TrialFinished):
            self.progress.setValue(event.position)
            self.table.appendPlainText(self._finished_line(event))  # each trial's figures as they arrive
        else:
            message = event.message if isinstance(event, TuneMessage | ProgressEvent) else None
            if message and (not isinstance(event, ProgressEvent) or event.kind == EventKind.MESSAGE):
                self.status.setText(message)

    def _finished_line(self, event: TrialFinished) -> str:
        run = event.run
        spec = self.spec
        trial = next((t for t in spec.trials if t.index == run.trial), None) if spec is not None else None
        head = f"trial {run.trial} ({trial.label if trial else '?'}), repeat {run.repeat}"
        if run.error or run.result is None:
            return f"{head}: failed: {run.error or 'no result'}"
        walls = [s.mean for p in run.result.prompts if (s := p.summary("wall_tps")) is not None]
        watts = [
            r.energy.mean_power_w
            for p in run.result.prompts
            for r in p.measured
            if r.energy is not None and r.energy.mean_power_w is not None
        ]
        figures = f"{sum(walls) / len(walls):.1f} wall TPS" if walls else "no wall TPS"
        if watts:
            figures += f", {sum(watts) / len(watts):.0f} W"
        return f"{head}: {figures}"

    def _finished(self, outcome: object) -> None:
        if not isinstance(outcome, TuneRecord):
            return
        self.show_record(outcome)
        state = "cancelled" if outcome.cancelled else ("failed" if outcome.error else "done")
        rec = self.analysis.recommendation if self.analysis else None
        summary = f"Tune of {outcome.profile} {state}" + (f": recommended {rec.trial.label}" if rec else "")
        self.status.setText(summary + "".join(f"; restored {r}" for r in outcome.restored))
        self._update()
        self.statusMessage.emit(summary)
        self.tune_finished.emit(summary)

    def _failed(self, message: str) -> None:
        self.status.setText(message)  # said here; the window's notice only says that it failed
        self.progress.setTextVisible(False)
        self._update()
        name = self.spec.name if self.spec is not None else "the profile"
        self.tune_finished.emit(f"Tune of {name} failed (see the Tune view)")

    def show_record(self, record: TuneRecord) -> None:
        """Analyse and show a tune's record."""
        self.record = record
        profile = self.spec.profile if self.spec is not None else self.profile
        self.analysis = analysis = analyse(record, profile_values=profile_values(profile, record))
        self.knob_chart.set_tune(record, analysis)
        self.pareto_chart.set_tune(record, analysis)
        rec = analysis.recommendation
        if rec is None:
            why = analysis.noise or "no trial produced a throughput"
            self.recommendation.setText(f"<b>No recommendation</b>: {html.escape(why)}.")
        else:
            lines = "".join(f"<br>· {html.escape(line)}" for line in rec.evidence)
            self.recommendation.setText(
                f"<b>Recommended: {html.escape(rec.trial.label)}</b> ({rec.verdict})<br>"
                f"<i>Knee rule: {analysis.rule}.</i>{lines}"
            )
        self.table.setPlainText(
            "\n".join([*export.markdown_table(analysis), "", export.post_row(record, analysis)])
        )
        self._update()

    # ---- results -------------------------------------------------------------------------------
    def apply_to_copy(self) -> str | None:
        """Save the recommendation as a new profile NAME-tuned (the original is never changed)."""
        if (
            self.spec is None
            or self.spec.profile is None
            or self.analysis is None
            or self.analysis.recommendation is None
        ):
            return None
        try:
            copy, notes = save_tuned_copy(
                self.session.store, self.spec.profile, self.analysis.recommendation.settings
            )
        except DynoError as exc:
            self.errorMessage.emit(window_message(exc))
            return None
        self.session.reload()
        self.status.setText(f"Saved as profile “{copy.name}”" + "".join(f"; {n}" for n in notes))
        self.copyCreated.emit(copy.name)
        return copy.name

    def export(self, kind: str, path: Path) -> None:
        """Write the shown tune in a registered format (``json``, ``csv``, ``markdown``, ``post`` …: see
        :mod:`llm_dyno.core.exports.registry`) or as ``png`` (both charts)."""
        if self.record is None or self.analysis is None:
            raise DynoError("no tune to export yet")
        if kind == "png":
            if not self.knob_chart.parentWidget().grab().save(str(path)):
                raise DynoError(f"{path}: the chart could not be written")
            return
        write_result(path, kind, TuneResult(self.record, self.analysis))

    def copy_post_row(self) -> None:
        """Put the tune's post row on the clipboard."""
        if self.record is not None and self.analysis is not None:
            QGuiApplication.clipboard().setText(export.post_row(self.record, self.analysis))
            self.status.setText("Post row copied")

    def _export_clicked(self, kind: str) -> None:
        suffix, filters = (".png", "PNG (*.png)") if kind == "png" else _suffix_filter(kind)
        name, _ = QFileDialog.getSaveFileName(
            self, "Export tune", f"tune-{self.record.tune_id if self.record else ''}{suffix}", filters
        )
        if name:
            try:
                self.export(kind, Path(name))
            except (DynoError, OSError) as exc:
                self.errorMessage.emit(window_message(exc))


def _suffix_filter(name: str) -> tuple[str, str]:
    fmt = RESULT_EXPORTS[name]
    return fmt.suffix, fmt.file_filter()
