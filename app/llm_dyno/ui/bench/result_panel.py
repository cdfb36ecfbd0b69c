"""The current run: a table that fills run by run, the spread chart, the Markdown line to paste, and
beside it the figures ``vllm bench serve`` would print for the same runs (with what was left out)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QColor, QFontDatabase, QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
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
from llm_dyno.ui.bench.format import METRIC_LABELS, RUN_COLUMNS, run_cells, warning_lines
from llm_dyno.ui.icons import icon
from llm_dyno.ui.widgets.empty_views import note_when_empty

_NUMERIC = {1, 3, 4, 5, 6, 7, 8, 9, 10}


class RunsTable(QTableWidget):
    """One row per run, runs left out of the headlines greyed, warnings in amber. Rows are one line high
    (a long warning ends in "…", whole in its tooltip and under the table), warm-ups are hidden until
    asked for, and a column no shown run has a figure in is hidden, so the measured runs fit."""

    OPTIONAL = ("Warm-up", "TPOT ms", "Accept %", "Energy J", "Warnings")  # hidden while empty

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
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        rows = self.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.show_warmups = False
        self._warmup_rows: set[int] = set()

    def rows_height(self) -> int:
        """The height that shows every shown row whole (header and frame included)."""
        rows = sum(self.rowHeight(r) for r in range(self.rowCount()) if not self.isRowHidden(r))
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
            if run.warmup or run.left_out:
                item.setForeground(QColor(c.muted))
            if col == len(RUN_COLUMNS) - 1 and text:
                item.setForeground(QColor(c.amber))
                item.setToolTip("\n".join(run.warnings))
            self.setItem(row, col, item)
        if run.warmup:
            self._warmup_rows.add(row)
            self.setRowHidden(row, not self.show_warmups)
        self.fit_columns()
        self.scrollToBottom()

    def set_show_warmups(self, show: bool) -> None:
        """Show or hide the warm-up rows."""
        self.show_warmups = show
        for row in self._warmup_rows:
            self.setRowHidden(row, not show)
        self.fit_columns()

    def empty_columns(self) -> list[str]:
        """The optional columns no shown run has a figure in (hidden)."""
        shown = [r for r in range(self.rowCount()) if not self.isRowHidden(r)]
        empty = []
        for name in self.OPTIONAL:
            col = RUN_COLUMNS.index(name)
            cells = (self.item(r, col) for r in shown)
            if all(i is None or i.text() in ("", "—") for i in cells):
                empty.append(name)
        return empty

    def fit_columns(self) -> None:
        """Hide the optional columns that hold nothing for the shown rows."""
        empty = set(self.empty_columns())
        for name in self.OPTIONAL:
            self.setColumnHidden(RUN_COLUMNS.index(name), name in empty)

    def clear_runs(self) -> None:
        """Empty the table."""
        self.setRowCount(0)
        self._warmup_rows.clear()
        self.fit_columns()


class NoteBox(QPlainTextEdit):
    """Read-only wrapped lines under the table: as tall as its text up to three lines, then it scrolls (a
    word-wrapped label at the bottom of a full view is cut instead)."""

    MAX_LINES = 3

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
        m = self.contentsMargins()  # the theme's padding
        frame = 2 * int(self.document().documentMargin()) + m.top() + m.bottom() + 2
        self.setFixedHeight(lines * line + frame if lines else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()


class ResultPanel(QWidget):
    """Table, chart and Markdown line of one result (running or loaded from the history)."""

    CHART_MIN = 110

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        self.title = QLabel("No result yet: pick a suite and run it.")
        self.title.setObjectName("sectionSubtitle")
        self.title.setMinimumWidth(80)
        # the title gives way (cut, whole in its tooltip) so that the not-measured note beside it is
        # whole: squeezed the other way, the note was drawn under the Show warm-ups box
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        self.empty_note = QLabel("")  # the figures no run has, said instead of shown as empty columns
        self.empty_note.setObjectName("sectionSubtitle")
        top.addWidget(self.empty_note)
        self.warmups_check = QCheckBox("Show warm-ups")
        self.warmups_check.setToolTip(
            "Warm-up runs warm the server's caches and are not counted in any figure; they are hidden "
            "so that every measured run fits."
        )
        self.warmups_check.toggled.connect(self._warmups_toggled)
        top.addWidget(self.warmups_check)
        top.addSpacing(12)
        top.addWidget(QLabel("Spread of"))
        self.metric_box = QComboBox()
        for key in ("wall_tps", "decode_tps", "ttft_s", "tokens_per_j"):
            self.metric_box.addItem(METRIC_LABELS[key], key)
        self.metric_box.setToolTip("The figure whose spread per prompt the chart under the table shows")
        self.metric_box.currentIndexChanged.connect(self._metric_changed)
        top.addWidget(self.metric_box)
        layout.addLayout(top)
        split = self.split = QSplitter(Qt.Orientation.Vertical)
        split.installEventFilter(self)
        self.table = RunsTable()
        note_when_empty(
            self.table, "No runs yet: Run benchmark (above) measures the selected profile's running server."
        )
        split.addWidget(self.table)
        self.chart = SpreadChart()
        self.chart.setMinimumHeight(self.CHART_MIN)  # under a full runs table on a laptop's screen
        split.addWidget(self.chart)
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

    def _warmups_toggled(self, show: bool) -> None:
        self.table.set_show_warmups(show)
        self._say_empty()
        self.fit_table()

    def _say_empty(self) -> None:
        empty = [c for c in self.table.empty_columns() if c not in ("Warm-up", "Warnings")]
        self.empty_note.setText(
            f"not measured: {', '.join(empty)}" if empty and self.table.rowCount() else ""
        )

    def _metric_changed(self) -> None:
        self.chart.set_runs(self._runs, self.metric_box.currentData())

    def start(self, title: str) -> None:
        """A new run begins: clear everything."""
        self.title.setText(title)
        self.title.setToolTip(title)
        self._runs = []
        self.table.clear_runs()
        self._say_empty()
        self.chart.set_runs([], self.metric_box.currentData())
        self.markdown.clear()
        self.roofline.clear()
        self.peer.clear()
        self.copy_button.setEnabled(False)

    def add_run(self, run: BenchRun) -> None:
        """A run finished."""
        self._runs.append(run)
        self.table.add_run(run)
        self._say_empty()
        self.chart.set_runs(self._runs, self.metric_box.currentData())
        self.fit_table()

    def fit_table(self) -> None:
        """Give the table the height of all its rows, as far as the chart keeps its minimum (then it
        scrolls by pixel, so no row is ever shown cut at a fixed place)."""
        total = sum(self.split.sizes())
        if total <= 0:
            return
        table = min(self.table.rows_height(), max(total - self.CHART_MIN, total // 2))
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
        self._say_empty()
        self.chart.set_runs(self._runs, self.metric_box.currentData())
        self.fit_table()
        self.set_markdown(markdown_line(result) if result.all_runs() else "")
        self.set_roofline(result)

    def set_roofline(self, result: BenchResult) -> None:
        """Show the figures of a finished result: each prompt's share of the decode ceiling (or why it
        is unknown) and ``vllm bench serve``'s figures with what the headlines left out."""
        self.roofline.setText(roofline_summary(result) if result.all_runs() else "")
        note = burst_note(result)  # once per result, not a warning on every run
        lines = [*prompt_lines(result), *([note] if note else []), *warning_lines(result)]
        self.peer.setText("\n".join(lines) if result.all_runs() else "")

    def copy_markdown(self) -> None:
        """Put the Markdown line on the clipboard."""
        QGuiApplication.clipboard().setText(self.markdown.text())
