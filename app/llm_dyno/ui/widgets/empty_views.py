"""Empty plots and tables that say what will be there, instead of placeholder 0…1 axes or a bare header.

Imports pyqtgraph: only chart modules (built after start-up) import this file.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractItemView, QLabel

from llm_dyno.ui import theme


def set_plot_empty(
    plot: pg.PlotWidget, text: str | None, sides: tuple[str, ...] = ("left", "bottom")
) -> None:
    """Say ``text`` in an empty plot without axes (no placeholder 0…1 or ±400 ranges), or bring the axes
    back (None). The text is a plot item: the plot's ``clear()`` removes it."""
    item = plot.getPlotItem()
    plot.empty_text = text
    if text is None:
        for side in sides:
            item.showAxis(side)
            axis = item.getAxis(side)
            # a hidden axis measured itself 0 wide: measure again, or its tick values stay clipped away
            axis._updateHeight() if side in ("top", "bottom") else axis._updateWidth()
        item.enableAutoRange()
        return
    for side in sides:
        item.hideAxis(side)
    note = pg.TextItem(text, color=theme.colors().muted, anchor=(0.5, 0.5))
    note.setPos(0.5, 0.5)
    item.addItem(note)
    item.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)


class _Keeper(QObject):
    """Keeps the note over the table's rows area as it resizes, shown while the table has no row. A child
    of the note: its connections end with it (a table outliving its note never calls a deleted label)."""

    def __init__(self, note: QLabel, table: QAbstractItemView) -> None:
        super().__init__(note)
        self.note, self.table = note, table

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            parent = self.note.parentWidget()
            if parent is not None:
                self.note.setGeometry(parent.rect().adjusted(12, 12, -12, -12))
        return False

    def update(self, *_args: object) -> None:
        self.note.setVisible(self.table.model().rowCount() == 0)


def note_when_empty(table: QAbstractItemView, text: str) -> QLabel:
    """Show ``text`` over ``table``'s rows area while it has no row (what will be there, and how to get
    it); returns the note, whose text may change."""
    viewport = table.viewport()
    note = QLabel(text, viewport)
    note.setObjectName("emptyTableNote")
    note.setWordWrap(True)
    note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    note.setStyleSheet(f"color: {theme.colors().muted}; background: transparent;")
    note.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
    note.setGeometry(viewport.rect().adjusted(12, 12, -12, -12))
    keeper = _Keeper(note, table)
    viewport.installEventFilter(keeper)
    model = table.model()
    for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset, model.layoutChanged):
        signal.connect(keeper.update)
    keeper.update()
    return note
