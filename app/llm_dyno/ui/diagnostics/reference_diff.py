"""The Diagnostics view's configuration table: your profile against the reference's published compose,
each differing setting with whether it matters for decode speed, why and its source, then the settings
both share (not the difference). The rows come from core (``ReferenceComparison``); this only shows
them. Above the environment rows of the "Config and environment" tab; hidden without a reference."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.diagnose.reference_profile import ReferenceComparison
from llm_dyno.ui import theme

NOT_SET = "(not set)"


class ReferenceDiffPanel(QWidget):
    """Where the reference's configuration comes from (or why there is none) above a table of the
    differences, those that matter first and tinted, then the shared settings."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setObjectName("referenceDiffHeader")
        layout.addWidget(self.header)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Setting", "Yours", "Reference", "Matters"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(True)
        h = self.table.horizontalHeader()
        h.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        h.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        h.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        h.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(self.table, 1)
        self.set_comparison(ReferenceComparison())

    def set_comparison(self, c: ReferenceComparison) -> None:
        """Show one comparison: the header says its source, or why there are no rows."""
        if c.note:
            self.header.setText(c.note)
        elif c.published:
            self.header.setText(f"Against the reference's compose: {c.published}. Hover a row for why.")
        else:
            self.header.setText("")
        colors = theme.colors()
        self.table.setRowCount(0)
        for r in c.rows:
            tip = (
                f"{r.field}\n{'matters' if r.matters else 'not the difference'}: {r.why}\nsource: {r.source}"
            )
            self._add(
                (r.field, r.yours or NOT_SET, r.reference or NOT_SET, "yes" if r.matters else "no"),
                tip,
                colors.changed if r.matters else None,
            )
        for s in c.shared:
            self._add(
                (s.setting, s.value, s.value, "shared"),
                f"{s.describe()}: not the difference\nsource: {s.source}",
                None,
            )
        self.table.resizeRowsToContents()
        self.table.setVisible(self.table.rowCount() > 0)
        self.setVisible(bool(c.rows or c.shared or c.note))  # no reference chosen: nothing to say here

    def _add(self, cells: tuple[str, str, str, str], tip: str, tint: str | None) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(tip)
            if tint is not None:
                item.setBackground(QColor(tint))
            self.table.setItem(row, col, item)

    def texts(self) -> list[list[str]]:
        """Every row's cell texts (for tests and copying)."""
        t = self.table
        return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]
