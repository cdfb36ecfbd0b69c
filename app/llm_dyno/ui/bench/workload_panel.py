"""The Benchmark view's Workload tab: a workload suite's steps (turns, cold and warm requests, context
lengths) as a table and a pyqtgraph plot (TTFT and decode TPS per step, against the step's context),
with what the report says in words. A standard suite's result leaves it empty, saying so."""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.workloads.records import WorkloadReport, WorkloadStep, workload_of
from llm_dyno.core.bench.workloads.text import workload_lines
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.ui import theme
from llm_dyno.ui.bench.charts import _style
from llm_dyno.ui.widgets.empty_views import note_when_empty, set_plot_empty

COLUMNS = ("Step", "Context", "Cached", "TTFT s", "Decode TPS", "Pass ms", "Accept %", "1st reasoning s",
           "1st content s", "Reasoning tok", "Content tok")  # fmt: skip
EMPTY = "No workload: run a multi-turn, shared-prefix or context-sweep suite, or open one from the history"


def _cells(s: WorkloadStep) -> list[str]:
    def num(v: float | None, fmt: str) -> str:
        return "—" if v is None else format(v, fmt)

    return [
        s.label, num(s.context_tokens, ",d"), num(s.cached_tokens, ",d"), num(s.ttft_s, ".3f"),
        num(s.decode_tps, ".1f"), num(None if s.pass_s is None else s.pass_s * 1000, ".1f"),
        num(None if s.acceptance_rate is None else s.acceptance_rate * 100, ".0f"),
        num(s.first_reasoning_s, ".3f"), num(s.first_content_s, ".3f"), num(s.reasoning_tokens, "d"),
        num(s.content_tokens, "d"),
    ]  # fmt: skip


def _means(steps: list[WorkloadStep], field: str) -> list[tuple[float, float]]:
    """(context, value) per length (a context sweep's repeats averaged) or per step, in order."""
    groups: dict[object, list[tuple[float, float]]] = {}
    for s in steps:
        value = getattr(s, field)
        if value is not None:
            key = s.target_tokens if s.target_tokens is not None else s.label
            groups.setdefault(key, []).append((float(s.context_tokens or 0), float(value)))
    return [(sum(x for x, _ in g) / len(g), sum(y for _, y in g) / len(g)) for g in groups.values()]


class WorkloadChart(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph is untyped
    """TTFT (left axis, solid) and decode TPS (right axis, dashed) per step (a context sweep's repeats
    averaged per length) against the step's context tokens: one report's curves, or one pair per result
    when stored results are compared (a context sweep's curve per profile)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self)
        self.setMinimumHeight(200)
        self.tps_view = pg.ViewBox()
        item = self.getPlotItem()
        item.showAxis("right")
        item.scene().addItem(self.tps_view)
        item.getAxis("right").linkToView(self.tps_view)
        self.tps_view.setXLink(item)
        item.vb.sigResized.connect(lambda: self.tps_view.setGeometry(item.vb.sceneBoundingRect()))
        self.legend = item.addLegend(offset=(10, 10))
        self.ttft_curves: list[pg.PlotDataItem] = []
        self.tps_curves: list[pg.PlotDataItem] = []
        self.show_reports([])

    def show_report(self, report: WorkloadReport | None) -> None:
        """Redraw for one ``report`` (None: the empty state)."""
        self.show_reports([("", report)] if report is not None else [])

    def show_reports(self, reports: list[tuple[str, WorkloadReport]]) -> None:
        """Redraw with a pair of curves per (label, report); no steps with a context: the empty state."""
        c = theme.colors()
        item = self.getPlotItem()
        item.clear()
        self.tps_view.clear()
        self.legend.clear()
        self.ttft_curves, self.tps_curves = [], []
        drawn = [(label, [s for s in r.steps if s.context_tokens is not None]) for label, r in reports]
        drawn = [(label, points) for label, points in drawn if points]
        if not drawn:
            set_plot_empty(self, EMPTY)
            return
        set_plot_empty(self, None)
        item.setLabel("bottom", "context (prompt tokens)", color=c.muted)
        item.setLabel("left", "TTFT s", color=c.muted)
        any_tps = any(s.decode_tps is not None for _, points in drawn for s in points)
        right = "decode TPS" if any_tps else "decode TPS (none: streams arrived in bursts)"
        item.setLabel("right", right, color=c.muted)
        for i, (label, points) in enumerate(drawn):
            color = c.accent if len(drawn) == 1 else pg.intColor(i, hues=max(len(drawn), 3))
            ttft, tps = _means(points, "ttft_s"), _means(points, "decode_tps")
            name = f"{label} " if label else ""
            curve = pg.PlotDataItem(
                [x for x, _ in ttft], [y for _, y in ttft], pen=pg.mkPen(color, width=2), symbol="o",
                symbolBrush=color, name=f"{name}TTFT",
            )  # fmt: skip
            rate = pg.PlotDataItem(
                [x for x, _ in tps], [y for _, y in tps], symbol="t", symbolBrush=color,
                name=f"{name}decode TPS", pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DashLine),
            )  # fmt: skip
            item.addItem(curve)
            self.tps_view.addItem(rate)
            if tps:
                self.legend.addItem(rate, rate.name())
            self.ttft_curves.append(curve)
            self.tps_curves.append(rate)
        item.enableAutoRange()
        self.tps_view.enableAutoRange(axis=pg.ViewBox.YAxis)
        self.tps_view.setGeometry(item.vb.sceneBoundingRect())


class WorkloadPanel(QWidget):
    """Shows the workload report of a result (:meth:`show_result`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.report: WorkloadReport | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        self.summary = QLabel(EMPTY)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical)
        self.chart = WorkloadChart()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        note_when_empty(self.table, "Each turn, request or context length of a workload shows here.")
        split.addWidget(self.chart)
        split.addWidget(self.table)
        layout.addWidget(split, 1)

    def show_result(self, result: BenchResult | None) -> None:
        """Show ``result``'s workload steps, or the empty state for a standard suite's result."""
        self.report = workload_of(result.context.extra) if result is not None else None
        self.chart.show_report(self.report)
        steps = self.report.steps if self.report else ()
        self.table.setRowCount(len(steps))
        for row, step in enumerate(steps):
            for col, text in enumerate(_cells(step)):
                self.table.setItem(row, col, QTableWidgetItem(text))
        if self.report is None:
            self.summary.setText(EMPTY)
        else:
            lines = workload_lines(self.report)
            self.summary.setText("\n".join([lines[0], *lines[2 + len(steps) :]]))

    def compare_stored(self, history: Path | None, ids: list[int]) -> None:
        """Draw the workload curves of the stored results ``ids`` together (one pair per result, named
        by its id and profile); the table keeps the first one's steps. Standard suites are left out."""
        try:
            with HistoryStore(history) as store:
                stored = [store.get(i) for i in sorted(ids)]
        except DynoError:  # the Compare tab says what is missing; the curves stay as they were
            return
        reports = [
            (f"#{s.entry.id} {s.entry.profile or s.entry.model or ''}".strip(), r)
            for s in stored
            if (r := workload_of(s.result.context.extra)) is not None
        ]
        if not reports:
            return
        first = next(s.result for s in stored if workload_of(s.result.context.extra) is not None)
        self.show_result(first)
        self.chart.show_reports(reports)
        names = ", ".join(f"{label} ({r.kind})" for label, r in reports)
        self.summary.setText(f"comparing {len(reports)} workloads: {names}")
