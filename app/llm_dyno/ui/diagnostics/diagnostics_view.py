"""The Diagnostics view: why is mine slower than the reference? Ranked findings with their evidence,
"Apply to a copy" for fixable ones, the roofline gauge, and the config + environment diff."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.diagnose.apply import apply_finding, fixed_name
from llm_dyno.core.diagnose.gather import (
    Gathered,
    reference_choices,
    remember_reference,
    remember_typed,
    remembered_reference,
    remembered_typed,
)
from llm_dyno.core.diagnose.inputs import Measured
from llm_dyno.core.diagnose.post import Post, with_post
from llm_dyno.core.diagnose.references import Reference, find_reference
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.diagnose_job import prepare_diagnose, run_diagnose
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.ui.diagnostics.gap_widgets import BootLogTable, CausesTable, GapSplitLabel, QuestionsTable
from llm_dyno.ui.diagnostics.no_findings import NoFindings
from llm_dyno.ui.diagnostics.read_inputs import ReadInputs
from llm_dyno.ui.diagnostics.reference_diff import ReferenceDiffPanel
from llm_dyno.ui.diagnostics.typed_inputs import TypedInputs
from llm_dyno.ui.diagnostics.widgets import DiffTable, FindingsTree, RooflineGauge
from llm_dyno.ui.jobs import run_here, run_task
from llm_dyno.ui.messages import window_message
from llm_dyno.ui.session import ProfileSession

_FROM_FILE = "\x00file"  # the reference combo's last item: choose a YAML file


class DiagnosticsView(QWidget):
    """Diagnoses the selected profile in a worker; ``diagnosed`` when findings are shown."""

    copyCreated = Signal(str)
    statusMessage = Signal(str)
    errorMessage = Signal(str)
    diagnosed = Signal()
    launchRequested = Signal(str)  # the profile to launch (for a launch log to read)
    benchmarkRequested = Signal()  # show the Benchmark view (for a benchmark to read)
    measureRequested = Signal(
        str, str
    )  # a copy made here and its original: A/B them (llm-dyno ab C --against O)
    _ready = Signal(int, object)  # generation, Gathered | str (an error)

    def __init__(
        self,
        session: ProfileSession | None = None,
        history_path: Path | None = None,
        parent: QWidget | None = None,
        registry: ServerManager | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self.history_path = history_path
        self.registry = registry or ServerManager()
        self.profile: Profile | None = None
        self.server_url: str | None = None
        self.gathered: Gathered | None = None
        self._references: list[Reference] = []
        self._file_references: dict[str, Reference] = {}  # chosen from a YAML file, by its path
        self._combo_index = 0
        self._generation = 0

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        top = QHBoxLayout()
        top.addWidget(QLabel("Compare with"))
        self.reference_combo = QComboBox()
        self.reference_combo.setMinimumWidth(200)  # the view fits beside the sidebar at 1100 px
        self.reference_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.reference_combo.currentIndexChanged.connect(self._reference_changed)
        top.addWidget(self.reference_combo, 1)
        self.refresh_button = QPushButton("Diagnose")
        self.refresh_button.setObjectName("primaryButton")
        self.refresh_button.clicked.connect(self.refresh)
        top.addWidget(self.refresh_button)
        layout.addLayout(top)

        # what diagnose reads beyond the profile: each of the CLI's inputs has its button here
        self.read_inputs = ReadInputs()
        self.read_inputs.changed.connect(self.refresh)
        self.read_inputs.errorMessage.connect(self.errorMessage)
        r = self.read_inputs
        self.log_button, self.paste_button, self.post_button = r.log_button, r.paste_button, r.post_button
        self.bench_button, self.server_button = r.bench_button, r.server_button
        self.reference_log_button = r.reference_log_button
        layout.addWidget(self.read_inputs)

        self.sources = QLabel()  # a row of its own: the TPS boxes beside it squeezed it into a column
        self.sources.setObjectName("sectionSubtitle")
        self.sources.setWordWrap(True)
        layout.addWidget(self.sources)
        # after "Apply to a copy": the one-click check, an A/B of the copy against its original
        self.measure_button = QPushButton("Measure against the original")
        self.measure_button.setToolTip(
            "Open the Benchmark view's A/B with the copy against the profile it was made from: each is "
            "launched in turn and benchmarked with the same suite (llm-dyno ab COPY --against ORIGINAL)."
        )
        self.measure_button.setVisible(False)
        self.measure_button.clicked.connect(self._measure)
        self._made: tuple[str, str] | None = None  # (copy, original) of the last Apply to a copy
        layout.addWidget(self.measure_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.typed_inputs = TypedInputs()  # typed numbers are kept per profile
        self.narr_box, self.code_box = self.typed_inputs.narr_box, self.typed_inputs.code_box
        self.acceptance_edit = self.typed_inputs.acceptance_edit
        self.length_box, self.power_box = self.typed_inputs.length_box, self.typed_inputs.power_box
        self.no_spec_box = self.typed_inputs.no_spec_box
        self.typed_inputs.changed.connect(self._typed_changed)
        layout.addWidget(self.typed_inputs)

        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 6, 0)
        t = QLabel("Findings, most likely impact first")
        t.setObjectName("sectionTitle")
        ll.addWidget(t)
        self.findings = FindingsTree()
        self.findings.applyRequested.connect(self.apply_to_copy)
        self.no_findings = NoFindings()  # instead of an empty list: what was looked at, what is missing
        self.no_findings.launchRequested.connect(self.launchRequested)
        self.no_findings.benchmarkRequested.connect(self.benchmarkRequested)
        self.findings_stack = QStackedWidget()
        self.findings_stack.addWidget(self.findings)
        self.findings_stack.addWidget(self.no_findings)
        ll.addWidget(self.findings_stack, 1)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(6, 0, 0, 0)
        self.gauge = RooflineGauge()
        rl.addWidget(self.gauge)
        t3 = QLabel("Where the gap is: tokens per pass × passes per second")
        t3.setObjectName("sectionTitle")
        rl.addWidget(t3)
        self.split_label = GapSplitLabel()
        rl.addWidget(self.split_label)
        self.tabs = QTabWidget()
        self.diff = DiffTable()
        self.no_reference = QLabel()  # instead of an empty table: why there is none, and how to pick one
        self.no_reference.setWordWrap(True)
        self.no_reference.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.diff_stack = QStackedWidget()
        self.diff_stack.addWidget(self.diff)
        self.diff_stack.addWidget(self.no_reference)
        # the profile against the reference's compose above the environment rows
        self.reference_config = ReferenceDiffPanel()
        config_page = QSplitter(Qt.Orientation.Vertical)
        config_page.addWidget(self.reference_config)
        config_page.addWidget(self.diff_stack)
        self.tabs.addTab(config_page, "Config and environment")
        self.boot = BootLogTable()
        # short tab names: the three fit beside the findings at 1280 px (the tooltips say them whole)
        self.tabs.addTab(self.boot, "Boot log")
        self.tabs.setTabToolTip(self.tabs.count() - 1, "Your boot log against the reference's")
        self.causes = CausesTable()
        self.tabs.addTab(self.causes, "Known causes")
        self.tabs.setTabToolTip(
            self.tabs.count() - 1, "Causes by field evidence: what people found behind a gap"
        )
        self.questions = QuestionsTable()
        self.tabs.addTab(self.questions, "Questions")
        self.tabs.setTabToolTip(self.tabs.count() - 1, "The questions such a post asks, each answered here")
        rl.addWidget(self.tabs, 1)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([560, 400])
        layout.addWidget(split, 1)
        self._ready.connect(self._show)
        self._fill_references()
        self._show_sources()

    # ---- inputs --------------------------------------------------------------------------------
    def set_target(self, profile: Profile | None, url: str | None) -> None:
        """The selected profile and its server's URL when it is ready; diagnoses again when either changed."""
        changed = profile != self.profile or url != self.server_url
        new_profile = profile is not None and (self.profile is None or profile.name != self.profile.name)
        self.profile, self.server_url = profile, url
        if new_profile and profile is not None:
            self._load_typed(profile.name)
        # the A/B offer stays while the copy or its original is selected
        self.measure_button.setVisible(
            self._made is not None and profile is not None and profile.name in self._made
        )
        if changed:
            self.read_inputs.profile_changed()
            self._fill_references()
            self.refresh()

    def _load_typed(self, profile_name: str) -> None:
        typed = remembered_typed(profile_name)
        if typed is None and self._typed() is not None:
            self._typed_changed()  # numbers typed before a profile was chosen stay with this one
            return
        self.typed_inputs.set_values(typed)

    def _typed_changed(self) -> None:
        if self.profile is None:
            return
        try:
            remember_typed(self.profile.name, self._typed())
        except OSError as exc:
            self.errorMessage.emit(f"cannot remember the typed TPS: {exc}")

    def _fill_references(self) -> None:
        try:
            self._references = reference_choices(self.profile)
        except DynoError as exc:
            self._references = []
            self.errorMessage.emit(f"cannot read the references: {exc}")
        want = remembered_reference(self.profile.name) if self.profile is not None else None
        if want and want.endswith((".yaml", ".yml")) and want not in self._file_references:
            with contextlib.suppress(DynoError, OSError, ValueError):  # a file gone since: not offered
                self._file_references[want] = find_reference(want)
        self.reference_combo.blockSignals(True)
        self.reference_combo.clear()
        self.reference_combo.addItem("No reference (findings from your setup only)", None)
        for ref in self._references:
            self.reference_combo.addItem(f"{ref.title}  [{ref.id}]", ref.id)
            self.reference_combo.setItemData(
                self.reference_combo.count() - 1, ref.file or "", Qt.ItemDataRole.ToolTipRole
            )
        for path, ref in self._file_references.items():  # --reference FILE: chosen with the last item
            self.reference_combo.addItem(f"{ref.title}  [{Path(path).name}]", path)
            self.reference_combo.setItemData(
                self.reference_combo.count() - 1, path, Qt.ItemDataRole.ToolTipRole
            )
        self.reference_combo.addItem("A reference from a YAML file…", _FROM_FILE)
        index = self.reference_combo.findData(want) if want else -1
        if index < 0 and self._references and self._references[0].id == "profile-reference":
            index = 1
        self.reference_combo.setCurrentIndex(max(index, 0))
        self._combo_index = self.reference_combo.currentIndex()
        self.reference_combo.blockSignals(False)

    def reference(self) -> Reference | None:
        """The chosen reference."""
        rid = self.reference_combo.currentData()
        if rid in self._file_references:
            return self._file_references[rid]
        return next((r for r in self._references if r.id == rid), None)

    def set_reference_file(self, path: Path) -> None:
        """Compare with the first reference of a YAML file (``diagnose --reference FILE``); remembered for
        the profile by its path, as the CLI reads it."""
        try:
            ref = find_reference(str(path)) if path.suffix in (".yaml", ".yml") else None
        except (DynoError, OSError, ValueError) as exc:
            ref, why = None, getattr(exc, "message", str(exc))
        else:
            why = "not a .yaml or .yml file"
        if ref is None:
            self.errorMessage.emit(f"cannot read the reference {path}: {why}")
            self.reference_combo.setCurrentIndex(self._combo_index)
            return
        key = str(path.resolve())
        self._file_references[key] = ref
        if self.profile is not None:
            with contextlib.suppress(OSError):
                remember_reference(self.profile.name, key)
        self._fill_references()  # selects it: the profile remembers it now
        self.reference_combo.blockSignals(True)
        self.reference_combo.setCurrentIndex(self.reference_combo.findData(key))
        self.reference_combo.blockSignals(False)
        self._reference_changed()

    def _reference_changed(self) -> None:
        if self.reference_combo.currentData() == _FROM_FILE:
            self.reference_combo.blockSignals(True)
            self.reference_combo.setCurrentIndex(self._combo_index)
            self.reference_combo.blockSignals(False)
            name, _ = QFileDialog.getOpenFileName(self, "A reference", "", "References (*.yaml *.yml)")
            if name:
                self.set_reference_file(Path(name))
            return
        self._combo_index = self.reference_combo.currentIndex()
        if self.profile is not None:
            try:
                remember_reference(self.profile.name, self.reference_combo.currentData())
            except OSError as exc:
                self.errorMessage.emit(f"cannot remember the reference: {exc}")
        self.refresh()

    # the Read row's inputs, as the rest of the window and its tests name them
    def set_log(self, path: Path | None) -> None:
        """Read this log instead of the profile's latest (``--log``)."""
        self.read_inputs.set_log(path)

    def set_reference_log(self, path: Path | None) -> None:
        """Read the reference's boot log from this file (``--reference-log``)."""
        self.read_inputs.set_reference_log(path)

    def set_post(self, path: Path | None) -> None:
        """Read a forum post from this file (``--post FILE``)."""
        self.read_inputs.set_post(path)

    @property
    def post(self) -> Post | None:
        """The forum post read (from a file or pasted)."""
        return self.read_inputs.post

    def typed_acceptance(self) -> tuple[float, ...]:
        """The typed per-position rates as fractions; () when empty or not readable (the box says why)."""
        return self.typed_inputs.typed_acceptance()

    def _typed(self) -> Measured | None:
        return self.typed_inputs.typed()

    # ---- diagnosing ----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Gather the inputs and run the rules (in a worker when live metrics are read: two seconds)."""
        self._generation += 1
        generation = self._generation
        profile, reference, url = self.profile, self.reference(), self.server_url
        read = self.read_inputs.choice()
        typed, post_notes = with_post(self._typed(), read.post)
        history = self.history_path
        self.sources.setText("Diagnosing…")

        registry = self.registry

        def show(result: Gathered | str) -> None:
            with contextlib.suppress(RuntimeError):  # the view closed while the worker read the metrics
                self._ready.emit(generation, result)

        def job() -> None:
            with read.log() as log:  # a pasted log: read as --log reads a file, the file gone after
                # the profile's server as the window's registry follows it (its URL, key and GPUs)
                spec = prepare_diagnose(
                    profile,
                    reference,
                    endpoint=read.endpoint(),
                    registry=registry,
                    log_path=log,
                    typed=typed,
                    history_path=history,
                    find_servers=False,
                    reference_log_path=read.reference_log_path,
                    bench_path=read.bench_path,
                    post=read.post,
                )
                gathered = run_diagnose(spec)
            if post_notes:
                gathered = dataclasses.replace(gathered, notes=(*gathered.notes, *post_notes))
            show(gathered)

        def failed(message: str) -> None:  # the view says why; a bug also reaches the funnel
            show(message if message.startswith("diagnosis failed") else f"diagnosis failed: {message}")

        if url is None and read.server is None:
            run_here("diagnosis", job, failed)  # files and rules only: milliseconds, no thread
        else:
            run_task("diagnosis", job, failed)

    def _show(self, generation: int, result: Gathered | str) -> None:
        if generation != self._generation:
            return  # a newer request is on its way
        if isinstance(result, str):
            self.sources.setText(result)
            self.errorMessage.emit(result)
            return
        self.gathered = result
        d = result.diagnosis
        self.findings.set_findings(d.findings)
        if d.findings:
            self.findings.expand_finding(d.findings[0].id)  # the most likely cause, opened
        if d.findings or self.profile is None:
            self.findings_stack.setCurrentWidget(self.findings)
        else:
            self.no_findings.show_state(
                self.profile.name, len(d.checked), result.sources, running=self.server_url is not None
            )
            self.findings_stack.setCurrentWidget(self.no_findings)
        reason = "Not computable: needs “Model loading took … GiB” in the log and a known GPU."
        self.gauge.set_roofline(d.roofline, "" if d.roofline else reason)
        self.diff.set_lines(result.diff)
        self.split_label.set_split(d.split)
        self.boot.set_rows(d.boot)
        self.causes.set_causes(d.causes)
        self.questions.set_answers(d.answers)
        self.reference_config.set_comparison(result.configuration)
        self._show_diff_or_why(bool(result.diff))
        self._show_sources()
        self.diagnosed.emit()

    def _show_diff_or_why(self, has_lines: bool) -> None:
        if has_lines:
            self.diff_stack.setCurrentWidget(self.diff)
            return
        name = f"“{self.profile.name}”" if self.profile is not None else "this profile"
        if self.reference() is not None:
            text = f"{name} and the reference agree on every setting compared."
        elif self._references:
            text = (
                f"No reference chosen for {name}, so there is nothing to compare its config with. Pick one "
                f"of the {len(self._references)} in “Compare with” above (the closest model and GPU to "
                "yours), or add a reference: section with your numbers to the profile."
            )
        else:
            text = (
                f"No reference for {name}: none is shipped or saved for its model. Add a reference: "
                "section with the numbers you compare against to the profile, then Diagnose."
            )
        self.no_reference.setText(text)
        self.diff_stack.setCurrentWidget(self.no_reference)

    def _show_sources(self) -> None:
        if self.profile is None:
            self.sources.setText("Select a profile to diagnose it.")
            return
        g = self.gathered
        parts = [f"“{self.profile.name}”"]
        if g is not None:
            parts += list(g.sources) or ["no inputs beyond the profile"]
            parts += list(g.notes)
            n = len(g.diagnosis.findings)
            parts.append(f"{n}\u00a0finding{'s' if n != 1 else ''}")  # never "1 /" and "finding" apart
            parts += [f"rule {rid} failed: {err}" for rid, err in g.diagnosis.rule_errors]
        self.sources.setText(" · ".join(parts))

    # ---- apply ---------------------------------------------------------------------------------
    def apply_to_copy(self, finding_id: str) -> str | None:
        """Store a copy of the profile with the finding's change; returns the copy's name."""
        finding = self.gathered.diagnosis.get(finding_id) if self.gathered else None
        if finding is None or self.profile is None or self.session is None:
            return None
        try:
            name = self.session.unique_name(fixed_name(self.profile, finding))
            copy = apply_finding(self.profile, finding, name=name)
            self.session.add(copy)
        except DynoError as exc:
            self.errorMessage.emit(window_message(exc))
            return None
        self.statusMessage.emit(
            f"Created “{copy.name}” with: {'; '.join(c.describe() for c in finding.changes)}"
        )
        self._made = (copy.name, self.profile.name)
        self.measure_button.setText(f"Measure “{copy.name}” against “{self.profile.name}”")
        self.measure_button.setVisible(True)
        self.copyCreated.emit(copy.name)
        return copy.name

    def _measure(self) -> None:
        if self._made is not None:
            self.measureRequested.emit(*self._made)
