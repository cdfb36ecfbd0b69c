"""The Diagnostics view's explanation of a gap: the split into tokens per pass × passes per second,
the boot-log fingerprint beside the reference's, and the field's causes with a verdict each."""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QWidget

from llm_dyno.core.diagnose.causes import Cause, Verdict
from llm_dyno.core.diagnose.fingerprint import ASK, FingerprintRow
from llm_dyno.core.diagnose.gap_split import GapSplit
from llm_dyno.core.diagnose.questions import Answer
from llm_dyno.ui import theme


class GapSplitLabel(QLabel):
    """Which factor holds the gap, with ms per pass and tokens per pass for both sides."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setObjectName("gapSplit")
        self.split: GapSplit | None = None
        self.set_split(None)

    def set_split(self, split: GapSplit | None) -> None:
        """Show the split, or what it needs."""
        self.split = split
        if split is None:
            self.setText(
                "Gap split: needs your TPS (a benchmark or live metrics) and a reference with TPS; where "
                "a side uses speculative decoding, its acceptance too (live metrics or the log's "
                "SpecDecoding lines)."
            )
            self.setToolTip("")
            return
        rows = []
        for p in split.prompts:
            rows.append(
                f"{p.prompt}: yours {p.yours.tps:g} tok/s = {p.yours.tokens_per_pass:.2f} tok/pass × "
                f"{p.yours.passes_per_s:.1f} pass/s ({p.yours.ms_per_pass:.1f} ms per pass); reference "
                f"{p.reference.tps:g} = {p.reference.tokens_per_pass:.2f} × {p.reference.passes_per_s:.1f} "
                f"({p.reference.ms_per_pass:.1f} ms)"
            )
        if split.no_spec is not None:  # --no-spec-tps: time per pass as target forward + overhead
            rows.append(html.escape(split.no_spec.verdict()))
        self.setText(f"<b>{split.verdict()}</b><br>" + "<br>".join(rows))
        self.setToolTip("\n".join(split.lines()))


def _item(text: str, tip: str = "", tint: str | None = None) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setToolTip(tip or text)
    if tint is not None:
        item.setBackground(QColor(tint))
    return item


class _Table(QTableWidget):
    def __init__(self, headers: list[str], parent: QWidget | None = None) -> None:
        super().__init__(0, len(headers), parent)
        self.setHorizontalHeaderLabels(headers)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setWordWrap(True)
        self._shares: tuple[float, ...] = ()  # of the width, for the first columns (set_shares)
        h = self.horizontalHeader()
        h.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        for col in range(1, len(headers)):
            h.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)

    def set_shares(self, shares: tuple[float, ...]) -> None:
        """Give the first columns these shares of the width (the last column takes the rest), kept
        when the table is resized; rows are re-measured for the wrapped text."""
        self._shares = shares
        h = self.horizontalHeader()
        for col in range(len(shares)):
            h.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        self._fit_columns()

    def _fit_columns(self) -> None:
        width = self.viewport().width()
        for col, share in enumerate(self._shares):
            self.setColumnWidth(col, max(80, int(width * share)))

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Columns to their shares, rows tall enough for their wrapped text at the new width."""
        super().resizeEvent(event)
        self._fit_columns()
        self.resizeRowsToContents()

    def texts(self) -> list[list[str]]:
        """Every row's cell texts (for tests and copying)."""
        return [[self.item(r, c).text() for c in range(self.columnCount())] for r in range(self.rowCount())]


class BootLogTable(_Table):
    """The boot-log facts, yours against the reference's; differences first and tinted, unknown
    reference facts say how to get them (tooltip)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(["Fact", "Yours", "Reference"], parent)
        # a version or a digest has no space to wrap at: its start and its end both identify it
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)

    def set_rows(self, rows: Sequence[FingerprintRow]) -> None:
        """Fill the table."""
        c = theme.colors()
        self.setRowCount(0)
        for r in rows:
            row = self.rowCount()
            self.insertRow(row)
            tint = c.changed if r.status == "differs" else None
            mark = {"differs": "≠", "unknown": "?", "same": "="}[r.status]
            how = f"{r.how_to_get}\n{ASK}" if r.reference is None else r.how_to_get
            self.setItem(row, 0, _item(f"{mark} {r.fact}"))
            yours = r.yours or "unknown"
            self.setItem(row, 1, _item(yours, f"{yours}\n{r.yours_where}" if r.yours_where else how, tint))
            theirs = r.reference or "unknown: how to get it in the tooltip"
            self.setItem(row, 2, _item(theirs, how or r.reference_where or theirs, tint))
        self.resizeRowsToContents()


class CausesTable(_Table):
    """The field's known causes, ranked by their evidence, each with its verdict here and the reason."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(["Verdict", "Cause", "Why"], parent)
        self.set_shares((0.15, 0.3))  # the reason is the longest: it takes the rest

    def set_causes(self, causes: Sequence[Cause]) -> None:
        """Fill the table; the published effect and its sources are the row's tooltip."""
        c = theme.colors()
        colours = {Verdict.LIKELY: c.red, Verdict.POSSIBLE: c.amber}
        self.setRowCount(0)
        for cause in causes:
            row = self.rowCount()
            self.insertRow(row)
            tip = f"{cause.title}\npublished: {cause.effect}\nsources: {cause.sources}\n{cause.reason}"
            verdict = _item(cause.verdict.value, tip)
            if cause.verdict in colours:
                verdict.setForeground(QColor(colours[cause.verdict]))
            self.setItem(row, 0, verdict)
            self.setItem(row, 1, _item(cause.title, tip))
            self.setItem(row, 2, _item(cause.reason, tip))
        self.resizeRowsToContents()


class QuestionsTable(_Table):
    """The questions a user of such a setup asks, each with its verdict here and the evidence."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(["Question", "Verdict", "Evidence"], parent)
        self.set_shares((0.25, 0.25))  # a question is a sentence: sized to its text it took it all

    def set_answers(self, answers: Sequence[Answer]) -> None:
        """Fill the table, one row per question."""
        self.setRowCount(0)
        for a in answers:
            row = self.rowCount()
            self.insertRow(row)
            tip = f"{a.question}\n{a.verdict}\n{a.evidence}"
            for col, text in enumerate((a.question, a.verdict, a.evidence)):
                self.setItem(row, col, _item(text, tip))
        self.resizeRowsToContents()
