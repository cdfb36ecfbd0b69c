"""A result's speculative-decoding acceptance by prompt kind: from the ``/metrics`` deltas of its runs,
and beside them the server's own per-request figures where it reports them (vLLM's
``--per-request-spec-decode-metrics``), which count that prompt's requests alone."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.result import BenchResult, PromptResult

COLUMNS = (
    "Prompt",
    "Mean length (/metrics)",
    "Accepted (/metrics)",
    "Per position (/metrics)",
    "Mean length (server, per request)",
    "Accepted (server)",
    "Requests",
    "Steps accepting 0, 1, 2 … drafts",
)
NO_SPEC_DECODE = "No speculative decoding in this profile: acceptance is not measured."
NO_DRAFTS = "No speculative decoding in this result: no drafts were counted."
NO_RESULT = "Run a benchmark or open a stored result to see its acceptance by prompt kind."
NO_PER_REQUEST = (
    "The server did not report per-request acceptance: start vLLM with "
    "--per-request-spec-decode-metrics summary to see each request's own figure beside the counters."
)


def _cells(p: PromptResult) -> list[str]:
    acc, req = p.acceptance, p.request_acceptance
    dash = "—"
    return [
        p.name,
        f"{acc.mean_length:.2f}" if acc and acc.mean_length else dash,
        f"{acc.rate:.0%}" if acc and acc.rate is not None else dash,
        " / ".join(f"{x:.0%}" for x in acc.per_position) if acc and acc.per_position else dash,
        f"{req.mean_length:.2f}" if req else dash,
        f"{req.rate:.0%}" if req else dash,
        str(req.requests) if req else dash,
        ", ".join(str(n) for n in req.histogram) if req and req.histogram else dash,
    ]


class AcceptancePanel(QWidget):
    """One row per prompt kind of the result shown; a note says what is missing and how to get it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.note = QLabel(NO_RESULT)
        self.note.setWordWrap(True)
        self.note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)  # alone: at the top
        layout = QVBoxLayout(self)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)
        self.speculates: bool | None = None  # whether the selected profile drafts tokens (None: unknown)
        self.measured = False  # whether the result shown counted drafts

    def set_speculates(self, speculates: bool | None) -> None:
        """The selected profile drafts tokens (True), does not (False) or is not known (None). Without
        speculative decoding and no measured acceptance to show, one line says so in place of the table."""
        self.speculates = speculates
        self._show_state()

    def _show_state(self) -> None:
        # a table of dashes never shows: measured acceptance, or the (empty) table of a profile that
        # drafts while its first result is awaited
        empty = self.table.rowCount() == 0
        self.table.setVisible(self.measured or (empty and self.speculates is not False))
        if self.measured:
            return
        if self.speculates is False:
            self.note.setText(NO_SPEC_DECODE)
        else:
            self.note.setText(NO_RESULT if empty else NO_DRAFTS)

    def show_result(self, result: BenchResult) -> None:
        """Fill the table from ``result``'s measured runs."""
        prompts = [p for p in result.prompts if p.measured]
        self.table.setRowCount(len(prompts))
        for row, p in enumerate(prompts):
            for col, text in enumerate(_cells(p)):
                self.table.setItem(row, col, QTableWidgetItem(text))
        self.measured = any(p.acceptance for p in prompts)
        if self.measured and not any(p.request_acceptance for p in prompts):
            self.note.setText(NO_PER_REQUEST)
        elif self.measured:
            self.note.setText(
                "Acceptance by prompt kind: the server's per-request figure counts that prompt's requests "
                "alone; the /metrics deltas also count any other request the server served meanwhile."
            )
        self._show_state()

    def texts(self) -> list[list[str]]:
        """The table's cells, row by row (for tests and screenshots' checks)."""
        cols = range(self.table.columnCount())
        return [
            [(item.text() if (item := self.table.item(r, c)) else "") for c in cols]
            for r in range(self.table.rowCount())
        ]
