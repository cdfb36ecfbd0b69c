"""The current run: a table that fills run by run, the spread chart, the Markdown line to paste, and
beside it the figures ``vllm bench serve`` would print for the same runs (with what was left out)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QFontDatabase, QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.ceiling import roofline_summary
from llm_dyno.core.bench.report import burst_note, markdown_line, prompt_lines
from llm_dyno.core.bench.result import BenchResult, BenchRun
from llm_dyno.ui import theme
from llm_dyno.ui.bench.charts import SpreadChart
from llm_dyno.ui.bench.format import METRIC_LABELS, RUN_COLUMNS, run_cells
from llm_dyno.ui.icons import icon

_NUMERIC = {1, 3, 4, 5, 6, 7, 8, 9, 10}


class RunsTable(QTableWidget):
    """One row per run, warm-ups and runs left out of the headlines greyed, warnings in amber."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(RUN_COLUMNS), parent)
        self.setHorizontalHeaderLabels(list(RUN_COLUMNS))
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAlternatingRowColors(True)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(RUN_COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.setWordWrap(True)  # a warning wraps in its row instead of ending in "…"
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)

    def rows_height(self) -> int:
        """The height that shows every row whole (header and frame included)."""
        rows = sum(self.rowHeight(r) for r in range(self.rowCount()))
        return rows + self.horizontalHeader().height() + 2 * self.frameWidth() + 2

    def add_run(self, run: BenchRun) -> None:
        """Append a run and scroll to it."""
        c = theme.colors()
        row = self.rowCount()
        self.insertRow(row)
        for col, text in enumerate(run_cells(run)):
            item = QTableWidgetItem(text)
            if col in _NUMERIC:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if run.warmup or run.stopped_early:
                item.setForeground(QColor(c.muted))
            if col == len(RUN_COLUMNS) - 1 and text:
                item.setForeground(QColor(c.amber))
                item.setToolTip("\n".join(run.warnings))
            self.setItem(row, col, item)
        self.scrollToBottom()

    def clear_runs(self) -> None:
        """Empty the table."""
        self.setRowCount(0)


class NoteBox(QPlainTextEdit):
    """Read-only wrapped lines under the table: as tall as its text up to four lines, then it scrolls (a
    word-wrapped label at the bottom of a full view is cut instead)."""

    MAX_LINES = 4

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(lambda _s: self._fit())
        self._fit()

    def text(self) -> str:
        """The lines shown."""
        return self.toPlainText()

    def setText(self, text: str) -> None:  # QLabel's name: the panel sets it as it set the label
        """Show these lines."""
        self.setPlainText(text)

    def _fit(self) -> None:
        lines = max(1, min(self.MAX_LINES, int(self.document().size().height()))) if self.toPlainText() else 0
        line = self.fontMetrics().lineSpacing()
        self.setFixedHeight(lines * line + 2 * int(self.document().documentMargin()) + 2 if lines else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()


class ResultPanel(QWidget):
    """Table, chart and Markdown line of one result (running or loaded from the history)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        self.title = QLabel("No result yet: pick a suite and run it.")
        self.title.setObjectName("sectionSubtitle")
        layout.addWidget(self.title)
        split = self.split = QSplitter(Qt.Orientation.Vertical)
        split.installEventFilter(self)
        self.table = RunsTable()
        split.addWidget(self.table)
        chart_box = QWidget()
        cl = QVBoxLayout(chart_box)
        cl.setContentsMargins(0, 6, 0, 0)
        row = QHBoxLayout()
        label = QLabel("Spread per prompt")
        label.setObjectName("sectionTitle")
        row.addWidget(label)
        row.addStretch(1)
        row.addWidget(QLabel("Metric"))
        self.metric_box = QComboBox()
        for key in ("wall_tps", "decode_tps", "ttft_s", "tokens_per_j"):
            self.metric_box.addItem(METRIC_LABELS[key], key)
        self.metric_box.currentIndexChanged.connect(self._metric_changed)
        row.addWidget(self.metric_box)
        cl.addLayout(row)
        self.chart = SpreadChart()
        self.chart.setMinimumHeight(140)  # under a full runs table on a laptop's screen
        cl.addWidget(self.chart, 1)
        split.addWidget(chart_box)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)

        md = QHBoxLayout()
        md.addWidget(QLabel("Markdown"))
        self.markdown = QLineEdit()
        self.markdown.setReadOnly(True)
        self.markdown.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.markdown.setPlaceholderText("the one-line summary people paste next to theirs appears here")
        md.addWidget(self.markdown, 1)
        self.copy_button = QPushButton(icon("copy"), "Copy")
        self.copy_button.setEnabled(False)
        self.copy_button.clicked.connect(self.copy_markdown)
        md.addWidget(self.copy_button)
        layout.addLayout(md)
        self.roofline = QLabel("")
        self.roofline.setObjectName("sectionSubtitle")  # muted: "n/a" is not an error
        self.roofline.setWordWrap(True)
        self.roofline.setToolTip(
            "Mean decode tok/s against the physical ceiling: memory bandwidth / weights in VRAM "
            "× mean acceptance length"
        )
        layout.addWidget(self.roofline)
        self.peer = NoteBox()
        self.peer.setToolTip(
            "What vllm bench serve reports for these runs: TTFT, TPOT = (E2E − TTFT) / (tokens − 1), "
            "ITL = every gap between streamed chunks, E2E latency; mean / median / p99 in ms, and "
            "output throughput. Runs that stopped early are left out of every headline figure."
        )
        layout.addWidget(self.peer)
        self._runs: list[BenchRun] = []

    def _metric_changed(self) -> None:
        self.chart.set_runs(self._runs, self.metric_box.currentData())

    def start(self, title: str) -> None:
        """A new run begins: clear everything."""
        self.title.setText(title)
        self._runs = []
        self.table.clear_runs()
        self.chart.set_runs([], self.metric_box.currentData())
        self.markdown.clear()
        self.roofline.clear()
        self.peer.clear()
        self.copy_button.setEnabled(False)

    def add_run(self, run: BenchRun) -> None:
        """A run finished."""
        self._runs.append(run)
        self.table.add_run(run)
        self.chart.set_runs(self._runs, self.metric_box.currentData())
        self.fit_table()

    def fit_table(self) -> None:
        """Give the table the height of all its rows, as far as the chart keeps its minimum (then it
        scrolls by pixel, so no row is ever shown cut at a fixed place)."""
        total = sum(self.split.sizes())
        if total <= 0:
            return
        chart_min = 175  # the chart's 140 and its title row
        table = min(self.table.rows_height(), max(total - chart_min, total // 2))
        if self.split.sizes() != [table, total - table]:
            self.split.setSizes([table, total - table])

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.split and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self.fit_table)  # the lines under it grew or shrank: fit again
        return super().eventFilter(watched, event)

    def set_markdown(self, text: str) -> None:
        """Show the Markdown line and enable Copy."""
        self.markdown.setText(text)
        self.markdown.setCursorPosition(0)
        self.copy_button.setEnabled(bool(text))

    def show_result(self, result: BenchResult, title: str) -> None:
        """Show a whole (stored) result."""
        self.start(title)
        for run in result.all_runs():
            self._runs.append(run)
            self.table.add_run(run)
        self.chart.set_runs(self._runs, self.metric_box.currentData())
        self.fit_table()
        self.set_markdown(markdown_line(result) if result.all_runs() else "")
        self.set_roofline(result)

    def set_roofline(self, result: BenchResult) -> None:
        """Show the figures of a finished result: each prompt's share of the decode ceiling (or why it
        is unknown) and ``vllm bench serve``'s figures with what the headlines left out."""
        self.roofline.setText(roofline_summary(result) if result.all_runs() else "")
        note = burst_note(result)  # once per result, not a warning on every run
        lines = [*prompt_lines(result), *([note] if note else [])]
        self.peer.setText("\n".join(lines) if result.all_runs() else "")

    def copy_markdown(self) -> None:
        """Put the Markdown line on the clipboard."""
        QGuiApplication.clipboard().setText(self.markdown.text())
