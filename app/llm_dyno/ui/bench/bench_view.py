"""The Benchmark view: pick a suite, one click runs it against the selected profile's server (or an
attached URL) in a worker; the table fills run by run; results go to the history, where they can be
filtered, tagged, exported and compared; power-cap sweeps where the GPU allows it."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.ab import has_spec_config
from llm_dyno.core.bench.report import markdown_line
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, EventKind, ProgressEvent, ThermalWait
from llm_dyno.core.bench.suite import Suite, available_suites, load_suite
from llm_dyno.core.bench.sweep import ABResult, SweepResult
from llm_dyno.core.bench.workloads.common import planned_runs
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.jobs.bench_job import BenchOutcome, prepare_bench, run_bench
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.storing import ResultStored, StoreFailed
from llm_dyno.core.jobs.sweep_job import prepare_sweep, run_sweep_job
from llm_dyno.core.profiles.model import PowerSettings, Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.runtime.memory import serves_without_gpu
from llm_dyno.core.telemetry.power import control_unavailable_reason
from llm_dyno.ui.bench.ab_panel import ABPanel
from llm_dyno.ui.bench.acceptance_panel import AcceptancePanel
from llm_dyno.ui.bench.attach_row import AttachRow
from llm_dyno.ui.bench.compare_panel import ComparePanel
from llm_dyno.ui.bench.history_panel import HistoryPanel
from llm_dyno.ui.bench.levels_panel import LevelsPanel
from llm_dyno.ui.bench.result_panel import ResultPanel
from llm_dyno.ui.bench.sweep_panel import SweepPanel
from llm_dyno.ui.bench.workload_panel import WorkloadPanel
from llm_dyno.ui.icons import icon
from llm_dyno.ui.jobs_manager import GPU_POWER, JobsManager, JobState, WhenBusy, server_resource
from llm_dyno.ui.messages import window_message
from llm_dyno.ui.session import ProfileSession

PREFERRED_SUITES = ("community", "quick")
NO_GPU_SWEEP = "no GPU on this profile (vLLM on the CPU): a power-cap sweep needs one"


class BenchmarkView(QWidget):
    """One-click benchmark, history, compare and sweep. ``benchmark_finished(summary)`` when a run ends."""

    benchmark_finished = Signal(str)
    statusMessage = Signal(str)
    errorMessage = Signal(str)
    launchRequested = Signal(str)  # the selected profile, not running: its Launch button here
    stopRequested = Signal(str)  # the running profile an A/B must not run beside

    def __init__(
        self,
        session: ProfileSession | None = None,
        history_path: Path | None = None,
        parent: QWidget | None = None,
        registry: ServerManager | None = None,
        jobs: JobsManager | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self.history_path = history_path
        self.registry = registry or ServerManager()  # the window's: where the profiles' servers run
        self.profile: Profile | None = None
        self.server_url: str | None = None
        self.last_result: BenchResult | None = None
        self.last_result_id: int | None = None
        self.jobs = jobs or JobsManager(self)  # the window's: one job per server (or GPU) at a time
        self.worker = self.jobs.channel(self)  # this view's benchmarks and sweeps
        self._done = 0
        self._total = 0

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        top = QHBoxLayout()
        top.addWidget(QLabel("Suite"))
        self.suite_combo = QComboBox()
        top.addWidget(self.suite_combo)
        self.thermal_check = QCheckBox("Steady GPU temp first")
        self.thermal_check.setChecked(True)
        self.thermal_check.setToolTip(
            "With a GPU, each prompt waits until the temperature holds steady (±1 °C over 10 s, at most "
            "2 min) and every run records its thermal state: a cold and a heat-soaked GPU differ by 4–5 %."
        )
        self._thermal_tip = self.thermal_check.toolTip()
        top.addWidget(self.thermal_check)
        self.run_button = QPushButton(icon("play", "#ffffff"), "Run benchmark")
        self.run_button.setObjectName("primaryButton")
        self.run_button.clicked.connect(lambda: self.start())
        top.addWidget(self.run_button)
        self.queue_button = QPushButton("Queue benchmark")  # while the target's server runs another job
        self.queue_button.setToolTip("Run the benchmark once the job now running on this server ends")
        self.queue_button.setVisible(False)
        self.queue_button.clicked.connect(lambda: self.start())
        top.addWidget(self.queue_button)
        self.cancel_button = QPushButton(icon("stop"), "Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        top.addWidget(self.cancel_button)
        top.addSpacing(12)
        self.target_label = QLabel()
        self.target_label.setObjectName("sectionSubtitle")
        self.target_label.setWordWrap(True)  # a long URL wraps: it never widens the view past the window
        self.target_label.setMinimumWidth(40)
        top.addWidget(self.target_label, 1)
        self.launch_button = QPushButton("Launch")  # when the selected profile is not running
        self.launch_button.setVisible(False)
        self.launch_button.clicked.connect(self._launch_clicked)
        top.addWidget(self.launch_button)
        layout.addLayout(top)

        self.attach = AttachRow()
        self.url_edit, self.model_edit = self.attach.url_edit, self.attach.model_edit
        self.attach.changed.connect(self._update_target)
        layout.addWidget(self.attach)

        prog = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m runs")
        self.progress.setTextVisible(False)
        prog.addWidget(self.progress, 1)
        self.status = QLabel("Idle")
        self.status.setObjectName("sectionSubtitle")
        self.status.setMinimumWidth(260)
        prog.addWidget(self.status)
        layout.addLayout(prog)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("editorTabs")
        self.tabs.setUsesScrollButtons(True)  # the tab row never widens the view past the window
        self.result_panel = ResultPanel()
        self.history = HistoryPanel(history_path)
        self.compare = ComparePanel()
        self.sweep = SweepPanel()
        self.tabs.addTab(self.result_panel, "Run")
        self.tabs.addTab(self.history, "History")
        self.tabs.addTab(self.compare, "Compare")
        self.tabs.addTab(self.sweep, "Sweep")
        self.ab = ABPanel(jobs=self.jobs)
        self.tabs.addTab(self.ab, "Spec A/B")
        self.levels = LevelsPanel(history_path, jobs=self.jobs)
        self.tabs.addTab(self.levels, "Load")
        self.acceptance = AcceptancePanel()
        self.tabs.addTab(self.acceptance, "Acceptance")
        self.workload = WorkloadPanel()  # a workload suite's steps (multi-turn, shared prefix, context)
        self.tabs.addTab(self.workload, "Workload")
        layout.addWidget(self.tabs, 1)

        self.worker.progressed.connect(self._progress)
        self.worker.finished.connect(self._finished)
        self.worker.failed.connect(self._failed)
        self.worker.withdrawn.connect(self.status.setText)
        self.jobs.changed.connect(self._update_target)  # a job of any view here started, queued or ended
        self.history.openRequested.connect(self.open_result)
        self.history.compareRequested.connect(self.compare_ids)
        self.history.error.connect(self.errorMessage)
        self.history.info.connect(self.statusMessage)
        self.sweep.sweepRequested.connect(self.start_sweep)
        self.sweep.saveCapRequested.connect(self.save_cap)
        self._power_reason = control_unavailable_reason()  # read once: it asks the driver
        self.sweep.set_unavailable(self._power_reason)
        self.ab.abRequested.connect(lambda: self.start_ab())
        self.ab.stopRequested.connect(self.stopRequested)
        self.ab.registry = self.registry
        self.ab.session = self.session
        self.ab.abFinished.connect(self._ab_finished)
        self.levels.registry = self.registry
        self.levels.target, self.levels.suite = self.target, lambda: self._suite(None)
        self.levels.resource = self._resource
        self.levels.loadFinished.connect(self.benchmark_finished)
        self.levels.error.connect(self.errorMessage)
        self.levels.show_latest()

        self.reload_suites()
        self.history.reload()
        if self.history.entries:
            self.open_result(self.history.entries[0].id, switch=False)
        self._update_target()

    # ---- target --------------------------------------------------------------------------------
    def reload_suites(self) -> None:
        """Fill the suite picker: community and quick first, then the user's suites."""
        names = list(available_suites())
        ordered = [n for n in PREFERRED_SUITES if n in names] + sorted(
            n for n in names if n not in PREFERRED_SUITES
        )
        self.suite_combo.clear()
        self.suite_combo.addItems(ordered)

    def set_target(self, profile: Profile | None, url: str | None) -> None:
        """The selected profile, and its server's URL when the server is ready (None otherwise)."""
        gpu_less = profile is not None and serves_without_gpu(profile)
        if gpu_less == self.thermal_check.isEnabled():  # only when that changes: the user's choice stays
            self.thermal_check.setEnabled(not gpu_less)
            self.thermal_check.setChecked(not gpu_less)
        self.profile = profile
        self.server_url = url
        self.acceptance.set_speculates(has_spec_config(profile) if profile is not None else None)
        # a profile without a GPU has no power cap to sweep, whatever this machine's driver says
        self.sweep.set_unavailable(NO_GPU_SWEEP if gpu_less else self._power_reason)
        self.thermal_check.setToolTip(
            "no GPU on this profile (vLLM on the CPU): no GPU temperature to wait for" if gpu_less
            else self._thermal_tip
        )  # fmt: skip
        self._update_target()

    def target(self) -> Profile | Endpoint | None:
        """What a click on Run benchmarks: an attached URL first, else the selected profile's ready
        server (its URL, key and GPUs come from the registry when the job is prepared)."""
        if self.attach.url():
            return self.attach.endpoint(self.profile.served_model_name if self.profile else None)
        if self.profile is not None and self.server_url:
            return self.profile
        return None

    def _launch_clicked(self) -> None:
        if self.profile is not None:
            self.launch_button.setEnabled(False)
            self.target_label.setText(f"Launching “{self.profile.name}”…")
            self.launchRequested.emit(self.profile.name)

    def thermal_wait(self) -> ThermalWait | None:
        """The thermal wait the user chose for benchmarks, sweeps and A/Bs started here."""
        return DEFAULT_THERMAL_WAIT if self.thermal_check.isChecked() else None

    def _describe(self, target: Profile | Endpoint) -> str:
        if isinstance(target, Endpoint):
            return target.describe()
        return f"{target.name} · {target.served_model_name} at {self.server_url}"

    def _resource(self, target: Profile | Endpoint) -> str:
        return server_resource(target.url if isinstance(target, Endpoint) else self.server_url or "")

    def _update_target(self) -> None:
        target = self.target()
        holder = self.jobs.holder([self._resource(target)]) if target is not None else None
        busy = holder is not None  # the target's server runs (or waits for) a job: Run would queue
        mine = self.worker.busy
        if target is not None:
            self.target_label.setText(f"Target: {self._describe(target)}")
        elif self.attach.url():
            self.target_label.setText("Give the served model name of the attached server.")
        elif self.profile is not None:
            self.target_label.setText(f"“{self.profile.name}” is not running: Launch it, or attach to a URL.")
        else:
            self.target_label.setText("Select a running profile, or attach to a server URL.")
        # the button about to be disabled hands its focus to the other one, not to the next field (the URL)
        run_on = target is not None and not busy
        following = self.cancel_button if mine else (self.run_button if run_on else None)
        if following is not None and self.focusWidget() in (self.run_button, self.cancel_button):
            following.setEnabled(True)
            following.setFocus()
        self.run_button.setEnabled(run_on)
        self.queue_button.setVisible(holder is not None)
        if holder is not None:
            self.queue_button.setToolTip(f"Run the benchmark once {holder.describe()} ends")
        self.cancel_button.setEnabled(mine)
        self.launch_button.setVisible(
            target is None and self.profile is not None and not self.server_url and not self.attach.url()
        )
        self.launch_button.setEnabled(not busy)
        self.suite_combo.setEnabled(not self.worker.running)
        sweep_held = self.jobs.holder([GPU_POWER]) is not None
        self.sweep.set_busy(busy or sweep_held or not isinstance(target, Profile))
        self.ab.set_profile(self.profile, running=self.server_url is not None)
        self.levels.set_ready(target is not None)

    # ---- running -------------------------------------------------------------------------------
    def _suite(self, name: str | None) -> Suite | None:
        try:
            return load_suite(name or self.suite_combo.currentText())
        except DynoError as exc:
            self.errorMessage.emit(window_message(exc))
            return None

    def start(self, suite: Suite | str | None = None) -> bool:
        """Run a suite (default: the picked one) against :meth:`target`; False when nothing started."""
        target = self.target()
        s = suite if isinstance(suite, Suite) else self._suite(suite)
        if target is None or s is None:
            return False
        title = f"{s.name} · {self._describe(target)}"
        registry, history, thermal = self.registry, self.history_path, self.thermal_wait()

        def work(emit: Emit, cancel: threading.Event) -> BenchOutcome:
            spec = prepare_bench(target, s, registry=registry, history_path=history, thermal_wait=thermal)
            return run_bench(spec, emit, cancel)

        job = self.worker.submit(
            f"benchmark {s.name}", [self._resource(target)], work, WhenBusy.QUEUE,
            on_start=lambda: self._begin(s, title),
        )  # fmt: skip
        if job.state is JobState.QUEUED and job.reason:
            self.status.setText(f"Benchmark {s.name} {job.reason}")
        self._update_target()
        return True

    def _begin(self, suite: Suite, title: str) -> None:
        self._done = 0
        self._warmups = suite.warmups
        self._total = planned_runs(suite)
        self.progress.setRange(0, max(self._total, 1))
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.status.setText("Starting…")
        self.result_panel.start(title)
        self.tabs.setCurrentWidget(self.result_panel)

    def cancel(self) -> None:
        """Stop after the current chunk; the runs done so far are kept."""
        running = self.worker.running
        self.worker.cancel()
        if running:
            self.status.setText("Cancelling…")

    def _progress(self, event: object) -> None:
        if isinstance(event, ResultStored):
            self.last_result_id = event.result_id
            return
        if isinstance(event, StoreFailed):
            self.errorMessage.emit(event.message)
            return
        if not isinstance(event, ProgressEvent):
            return
        if event.kind == EventKind.RUN_STARTED:
            # the runner numbers warm-ups and runs together (1…warm-ups+runs); people count them apart
            warmups = getattr(self, "_warmups", 0)
            if event.warmup:
                label = f"warm-up {event.index} of {warmups}"
            else:
                label = f"run {event.index - warmups} of {event.total - warmups}"
            self.status.setText(f"{event.prompt}: {label}")
        elif event.kind == EventKind.RUN_FINISHED and event.run is not None:
            self._done += 1
            self.progress.setValue(min(self._done, self._total))
            self.result_panel.add_run(event.run)
        elif event.message:
            self.status.setText(event.message)

    def _finished(self, outcome: object) -> None:
        if isinstance(outcome, SweepResult):
            self._sweep_finished(outcome)
        elif isinstance(outcome, BenchOutcome):
            self._bench_finished(outcome)

    def _bench_finished(self, outcome: BenchOutcome) -> None:
        result = outcome.result
        self.last_result = result
        self.last_result_id = outcome.result_id
        line = markdown_line(result) if result.all_runs() else ""
        self.result_panel.set_markdown(line)
        self.result_panel.set_roofline(result)
        self.acceptance.show_result(result)
        self.workload.show_result(result)
        saved = f" · saved as #{outcome.result_id}" if outcome.result_id is not None else ""
        if result.error:
            state = f"failed: {result.error}"
        elif result.cancelled:
            state = "cancelled"
        else:
            state = "done"
        self.status.setText(f"{state.capitalize()}{saved}")
        self.history.reload()
        self._update_target()
        who = result.context.profile_name or result.context.model or "server"
        summary = f"Benchmark {result.suite} on {who} {state}" + (f": {line}" if line else "")
        self.statusMessage.emit(summary)
        self.benchmark_finished.emit(summary)

    def _failed(self, message: str) -> None:
        self.status.setText(message)
        self.progress.setTextVisible(False)
        self._update_target()
        self.errorMessage.emit(message)

    # ---- history, compare ----------------------------------------------------------------------
    def open_result(self, result_id: int, switch: bool = True) -> None:
        """Show a stored result in the Run tab."""
        try:
            with HistoryStore(self.history_path) as store:
                stored = store.get(result_id)
        except DynoError as exc:
            self.errorMessage.emit(window_message(exc))
            return
        e = stored.entry
        title = f"#{e.id} · {e.suite} · {e.profile or e.model or '—'} · {e.started.replace('T', ' ')[:19]}"
        self.result_panel.show_result(stored.result, title)
        self.acceptance.show_result(stored.result)
        self.workload.show_result(stored.result)
        if switch:
            self.tabs.setCurrentWidget(self.result_panel)

    def compare_ids(self, ids: list[int]) -> None:
        """Compare stored results with the oldest (the baseline) and show the Compare tab."""
        error = self.compare.compare_stored(self.history_path, ids)
        self.workload.compare_stored(self.history_path, ids)  # workload curves, one per result
        if error is not None:
            self.errorMessage.emit(error)
        else:
            self.tabs.setCurrentWidget(self.compare)

    # ---- sweep ---------------------------------------------------------------------------------
    def start_sweep(self, caps: list[float]) -> bool:
        """Sweep the selected profile's server over ``caps`` with the picked suite."""
        target = self.target()
        suite = self._suite(None)
        if self.sweep.unavailable or not isinstance(target, Profile) or suite is None:
            return False
        title = f"sweep {', '.join(f'{c:.0f}' for c in caps)} W · {self._describe(target)}"

        def begin() -> None:
            self._begin(suite.with_counts(), title)
            self.progress.setRange(0, max(self._total * len(caps), 1))
            self._total *= len(caps)

        registry, thermal = self.registry, self.thermal_wait()

        def work(emit: Emit, cancel: threading.Event) -> SweepResult:
            # the profile's GPUs, each cap checked against their range, locked while the sweep runs
            spec = prepare_sweep(target, tuple(caps), suite, registry=registry, thermal_wait=thermal)
            return run_sweep_job(spec, emit, cancel, registry=registry)

        job = self.worker.submit(
            "power-cap sweep", [self._resource(target), GPU_POWER], work, WhenBusy.REFUSE, on_start=begin
        )
        if job.state is JobState.REFUSED:
            self.status.setText(job.reason or "")
            self.errorMessage.emit(job.reason or "")
            return False
        self._update_target()
        return True

    def _sweep_finished(self, sweep: SweepResult) -> None:
        self.sweep.show_sweep(sweep, can_save=self.profile is not None and self.session is not None)
        self.tabs.setCurrentWidget(self.sweep)
        self.history.reload()
        state = sweep.error or ("cancelled" if sweep.cancelled else "done")
        self.status.setText(f"Sweep {state}")
        self._update_target()
        self.benchmark_finished.emit(f"Power-cap sweep {state}")

    # ---- spec-decode A/B ------------------------------------------------------------------------
    def start_ab(self, suite: Suite | str | None = None) -> bool:
        """Relaunch the selected profile without and with its speculative config, with the picked suite."""
        s = suite if isinstance(suite, Suite) else self._suite(suite)
        if self.profile is None or s is None:
            return False
        self.tabs.setCurrentWidget(self.ab)
        started = self.ab.start(self.profile, s, thermal_wait=self.thermal_wait())
        self._update_target()
        return started

    def measure_against(self, original: str) -> None:
        """Show the A/B tab with the selected profile (a copy) measured against ``original``."""
        self.tabs.setCurrentWidget(self.ab)
        self.ab.set_against(original)

    def _ab_finished(self, ab: ABResult) -> None:
        self.history.reload()
        self._update_target()
        self.benchmark_finished.emit("Spec-decode A/B: " + "; ".join(ab.summary()))

    def save_cap(self, watts: float) -> None:
        """Write ``watts`` as the selected profile's power limit."""
        if self.profile is None or self.session is None:
            return
        power = self.profile.power or PowerSettings()
        updated = self.profile.with_changes(power=power.model_copy(update={"limit_w": watts}))
        try:
            self.session.save(updated)
        except DynoError as exc:
            self.errorMessage.emit(window_message(exc))
            return
        self.statusMessage.emit(f"Saved a {watts:.0f} W power limit into “{updated.name}”")
