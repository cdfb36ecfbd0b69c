"""Load tab: concurrency levels or Poisson rates with user SLOs, run against the view's target; a chart of
output throughput against per-user TPS with the Pareto front, and a table of the levels.

The job is core/jobs/load_job (the same endpoint, key, GPUs, suite check and history as a benchmark),
in this panel's own job runner; the levels appear as they finish, and a cancel keeps the finished ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.load import (
    LevelResult,
    LoadResult,
    Slo,
    pareto_front,
    parse_concurrency,
    parse_rates,
    parse_slo,
)
from llm_dyno.core.bench.load_runner import LevelFinished, LevelStarted, LoadMessage, LoadPlan, RequestDone
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.load_job import LoadOutcome, prepare_load, run_load
from llm_dyno.core.jobs.storing import StoreFailed
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.ui import theme
from llm_dyno.ui.bench.charts import _style
from llm_dyno.ui.jobs_manager import JobsManager, JobState, WhenBusy, server_resource
from llm_dyno.ui.messages import window_message
from llm_dyno.ui.widgets.empty_views import note_when_empty, set_plot_empty

COLUMNS = (
    "Level", "Requests", "Output tok/s", "Per-user tok/s", "TTFT ms", "TPOT ms", "ITL ms", "E2E ms",
    "Goodput req/s", "Acceptance", "Energy J",
)  # fmt: skip


def _f(v: float | None, spec: str = ".1f") -> str:
    return "—" if v is None else f"{v:{spec}}"


class LevelsChart(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph is untyped
    """Each level a labelled point (x per-user tok/s, y output tok/s); the Pareto front joined by a line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self)
        self.setMinimumHeight(220)
        self.setLabel("bottom", "per-user tok/s (1 / mean TPOT)")
        self.setLabel("left", "output tok/s")
        self.points: list[tuple[float, float]] = []
        self.front: list[int] = []
        self.set_levels([])

    def set_levels(self, levels: list[LevelResult]) -> None:
        """Redraw for these levels (levels without figures are left out)."""
        self.clear()
        c = theme.colors()
        shown = [(lv, lv.per_user_tps, lv.output_throughput_tps) for lv in levels]
        kept = [(lv, x, y) for lv, x, y in shown if x is not None and y is not None]
        self.points = [(x, y) for _, x, y in kept]
        self.front = pareto_front(self.points)
        if not kept:
            set_plot_empty(self, "No load levels yet: each level shows here as output against per-user tok/s")
            return
        set_plot_empty(self, None)
        others = [i for i in range(len(kept)) if i not in self.front]
        self.addItem(
            pg.ScatterPlotItem(
                [self.points[i][0] for i in others], [self.points[i][1] for i in others], size=9,
                brush=pg.mkBrush(c.muted), pen=pg.mkPen(c.border),
            )
        )  # fmt: skip
        fx = [self.points[i][0] for i in self.front]
        fy = [self.points[i][1] for i in self.front]
        self.addItem(pg.PlotDataItem(fx, fy, pen=pg.mkPen(c.accent, width=2)))
        self.addItem(pg.ScatterPlotItem(fx, fy, size=11, brush=pg.mkBrush(c.accent), pen=pg.mkPen(c.base)))
        for i, (lv, x, y) in enumerate(kept):
            n = lv.level.concurrency
            label = pg.TextItem(f"c={n}" if n is not None else f"{lv.level.rate:g}/s", color=c.text)
            # front labels above their point, the others below: neighbours on and off it do not overlap
            label.setAnchor((0.5, 1.3) if i in self.front else (0.5, -0.3))
            label.setPos(x, y)
            self.addItem(label)
        xs, ys = [p[0] for p in self.points], [p[1] for p in self.points]
        pad_x, pad_y = max(max(xs) * 0.12, 1.0), max(max(ys) * 0.15, 1.0)
        self.setXRange(max(0.0, min(xs) - pad_x), max(xs) + pad_x, padding=0)
        self.setYRange(max(0.0, min(ys) - pad_y), max(ys) + pad_y, padding=0)


class LevelsPanel(QWidget):
    """Inputs, Run / Cancel, the chart and the table. ``target`` and ``suite`` come from the view."""

    loadFinished = Signal(str)  # a one-line summary, once the run ends (done, cancelled or failed)
    error = Signal(str)

    def __init__(
        self,
        history_path: Path | None = None,
        parent: QWidget | None = None,
        *,
        jobs: JobsManager | None = None,
    ) -> None:
        super().__init__(parent)
        self.history_path = history_path
        self.registry: ServerManager | None = None
        self.target: Callable[[], Profile | Endpoint | None] = lambda: None
        self.suite: Callable[[], Suite | None] = lambda: None
        # the server a target's job holds (the view knows its profile's URL)
        self.resource: Callable[[Profile | Endpoint], str] = lambda t: server_resource(
            t.url if isinstance(t, Endpoint) else t.name
        )
        self.jobs = jobs or JobsManager(self)  # the window's; a panel alone makes its own
        self.worker = self.jobs.channel(self)
        self.result: LoadResult | None = None
        self.result_id: int | None = None
        self._ready = False
        self._shown: list[LevelResult] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Concurrency"))
        self.concurrency_edit = QLineEdit("1,2,4,8")
        self.concurrency_edit.setToolTip("Closed loop: N parallel streams per level, e.g. 1,2,4,8")
        self.concurrency_edit.setMaximumWidth(120)
        row.addWidget(self.concurrency_edit)
        row.addWidget(QLabel("or rate"))
        self.rate_edit = QLineEdit()
        self.rate_edit.setPlaceholderText("req/s, e.g. 0.5,1")
        self.rate_edit.setToolTip("Open loop: Poisson arrivals at R requests/s per level (seeded)")
        self.rate_edit.setMaximumWidth(120)
        row.addWidget(self.rate_edit)
        row.addStretch(1)
        layout.addLayout(row)
        row = QHBoxLayout()  # a second row: the first no longer widens the view past a laptop's window
        row.addWidget(QLabel("SLO"))
        self.slo_edit = QLineEdit()
        self.slo_edit.setPlaceholderText("ttft=2s,tpot=50ms")
        self.slo_edit.setToolTip("Goodput counts the requests meeting every SLO (TTFT, TPOT, E2E)")
        self.slo_edit.setMinimumWidth(170)
        self.slo_edit.setMaximumWidth(200)
        row.addWidget(self.slo_edit)
        row.addWidget(QLabel("Requests"))
        self.requests_spin = QSpinBox()
        self.requests_spin.setRange(0, 10_000)
        self.requests_spin.setSpecialValueText("auto")
        self.requests_spin.setToolTip("Requests per level (auto: the suite's prompts × runs, at least 2 × N)")
        row.addWidget(self.requests_spin)
        self.run_button = QPushButton("Run load levels")
        self.run_button.setObjectName("primaryButton")
        self.run_button.clicked.connect(lambda: self.start())
        row.addWidget(self.run_button)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.worker.cancel)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        layout.addLayout(row)
        status_row = QHBoxLayout()
        self.status = QLabel("")
        self.status.setObjectName("sectionSubtitle")
        self.status.setWordWrap(True)
        status_row.addWidget(self.status, 1)
        status_row.addWidget(QLabel("Stored runs"))
        self.stored = QComboBox()
        self.stored.setToolTip("Every stored load run, newest first: pick one to show it")
        self.stored.setMinimumWidth(260)
        self.stored.activated.connect(lambda index: self.show_stored(self.stored.itemData(index)))
        status_row.addWidget(self.stored)
        layout.addLayout(status_row)
        self.chart = LevelsChart()
        layout.addWidget(self.chart, 3)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(self.table, 2)
        note_when_empty(
            self.table, "One row per level once Run load levels has run, or a stored run is picked."
        )
        self.worker.progressed.connect(self._progress)
        self.worker.finished.connect(self._finished)
        self.worker.failed.connect(self._failed)
        self.worker.withdrawn.connect(self.status.setText)
        self.worker.changed.connect(lambda: self.set_ready(self._ready))

    @property
    def busy(self) -> bool:
        """Whether load levels of this panel run or wait their turn."""
        return self.worker.busy

    # ---- inputs ----------------------------------------------------------------------------------
    def plan(self) -> LoadPlan:
        """The plan the inputs describe; :class:`DynoError` saying which input is wrong."""
        from llm_dyno.core.bench.load_runner import levels_of

        conc_text, rate_text = self.concurrency_edit.text().strip(), self.rate_edit.text().strip()
        if not conc_text and not rate_text:
            raise DynoError("give concurrency levels (e.g. 1,2,4) or rates (e.g. 0.5,1)")
        conc = parse_concurrency(conc_text) if conc_text else ()
        rates = parse_rates(rate_text) if rate_text else ()
        slo = parse_slo(self.slo_edit.text()) if self.slo_edit.text().strip() else Slo()
        requests = self.requests_spin.value() or None
        return LoadPlan(levels_of(conc, rates), requests, 0, slo)

    def set_ready(self, ready: bool) -> None:
        """Whether the view has a target (a job on its server already running queues this one)."""
        self._ready = ready
        self.run_button.setEnabled(ready and not self.busy)
        self.cancel_button.setEnabled(self.busy)

    # ---- running ---------------------------------------------------------------------------------
    def start(self) -> bool:
        """Run the levels against the view's target with its suite; False when nothing started."""
        target, suite = self.target(), self.suite()
        if target is None or suite is None or self.busy:
            return False
        try:
            plan = self.plan()
        except DynoError as exc:
            self.status.setText(window_message(exc))
            self.error.emit(window_message(exc))
            return False
        registry, history = self.registry, self.history_path

        def work(emit: Emit, cancel: threading.Event) -> LoadOutcome:
            spec = prepare_load(target, suite, plan, registry=registry, history_path=history)
            return run_load(spec, emit, cancel)

        def begin() -> None:
            self.result, self.result_id = None, None
            self.show_levels([], plan.slo)
            self.status.setText("Starting…")

        job = self.worker.submit("load levels", [self.resource(target)], work, WhenBusy.QUEUE, on_start=begin)
        if job.state is JobState.QUEUED and job.reason:
            self.status.setText(f"Load levels {job.reason}")
        return True

    def _progress(self, event: object) -> None:
        if isinstance(event, LevelStarted):
            self.status.setText(
                f"Level {event.index} of {event.total}: {event.level.describe()}, {event.requests} requests"
            )
        elif isinstance(event, RequestDone):
            self.status.setText(f"{event.level.describe()}: {event.done} of {event.total} requests")
        elif isinstance(event, LevelFinished):
            self._shown.append(event.result)
            self.show_levels(self._shown, event.slo)
        elif isinstance(event, LoadMessage):
            self.status.setText(event.message)
        elif isinstance(event, StoreFailed):
            self.error.emit(event.message)

    def _finished(self, outcome: object) -> None:
        if not isinstance(outcome, LoadOutcome):
            return
        r = outcome.result
        self.result, self.result_id = r, outcome.result_id
        self.show_levels(r.levels, r.slo)
        state = f"failed: {r.error}" if r.error else ("cancelled" if r.cancelled else "done")
        saved = f" · saved as #{outcome.result_id}" if outcome.result_id is not None else ""
        self.status.setText(f"{len(r.levels)} levels {state}{saved}")
        self.refresh_stored(select=outcome.result_id)
        self.loadFinished.emit(f"Load levels on {r.model} {state}")

    def _failed(self, message: str) -> None:
        self.status.setText(message)

    # ---- showing ---------------------------------------------------------------------------------
    def show_levels(self, levels: Sequence[LevelResult], slo: Slo) -> None:
        """Fill the chart and the table; Pareto-front rows in bold."""
        self._shown = list(levels)
        self.chart.set_levels(self._shown)
        with_figures = [lv for lv in levels if lv.per_user_tps is not None and lv.output_throughput_tps]
        front = {id(with_figures[i]) for i in self.chart.front}
        self.table.setRowCount(len(levels))
        for row, lv in enumerate(levels):
            ttft, tpot, itl, e2e = lv.ttft(), lv.tpot(), lv.itl(), lv.e2e()
            acc = lv.acceptance.rate if lv.acceptance is not None else None
            cells = (
                lv.level.describe(), str(len(lv.ok)), _f(lv.output_throughput_tps), _f(lv.per_user_tps),
                *(_f(None if s is None else s.mean * 1000) for s in (ttft, tpot, itl, e2e)),
                _f(lv.goodput_rps(slo), ".2f"), "—" if acc is None else f"{acc * 100:.0f} %",
                _f(lv.energy.energy_j if lv.energy is not None else None, ".0f"),
            )  # fmt: skip
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if id(lv) in front:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                    item.setToolTip(
                        "on the Pareto front: no other level has both more output and per-user tok/s"
                    )
                warnings = lv.warnings()
                if warnings:
                    item.setToolTip("; ".join(warnings))
                self.table.setItem(row, col, item)
        # a column no level measured (acceptance without speculative decoding, energy without a GPU)
        # is hidden instead of a column of dashes
        for name, measured in (
            ("Acceptance", any(lv.acceptance is not None for lv in levels)),
            ("Energy J", any(lv.energy is not None for lv in levels)),
        ):
            self.table.setColumnHidden(COLUMNS.index(name), bool(levels) and not measured)

    def refresh_stored(self, select: int | None = None) -> None:
        """List the stored load runs (newest first, the latest 200) in the picker."""
        try:
            with HistoryStore(self.history_path) as store:
                entries = store.list(kind="load", limit=200)
        except DynoError as exc:
            self.error.emit(window_message(exc))
            return
        self.stored.clear()
        for e in entries:
            who = e.profile or e.model or "server"
            self.stored.addItem(f"#{e.id} · {who} · {e.started[:16].replace('T', ' ')}", e.id)
        if select is not None and (index := self.stored.findData(select)) >= 0:
            self.stored.setCurrentIndex(index)

    def show_stored(self, result_id: int | None) -> None:
        """Show one stored load run."""
        if result_id is None:
            return
        try:
            with HistoryStore(self.history_path) as store:
                _, result = store.get_load(result_id)
        except DynoError as exc:
            self.error.emit(window_message(exc))
            return
        self.result, self.result_id = result, result_id
        self.show_levels(result.levels, result.slo)
        self.status.setText(f"#{result_id} · {result.model} · {result.started[:19]}")

    def show_latest(self) -> None:
        """List the stored load runs and show the newest (when the view opens)."""
        self.refresh_stored()
        if self.stored.count():
            self.stored.setCurrentIndex(0)
            self.show_stored(self.stored.itemData(0))
