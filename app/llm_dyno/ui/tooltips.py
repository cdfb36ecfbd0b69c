"""Tooltips for table and tree cells whose text is cut off ("…"): the full text on hover.

One application-wide event filter instead of a tooltip on every item: it answers a tooltip request on
any item view's viewport when the cell has no tooltip of its own and its text does not fit.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFontMetrics, QHelpEvent
from PySide6.QtWidgets import QAbstractItemView, QApplication, QToolTip

_CELL_PADDING = 12  # the style's text margins in a cell, left and right together


def cell_is_cut(view: QAbstractItemView, text: str, font_metrics: QFontMetrics, width: int) -> bool:
    """Whether ``text`` needs more than ``width`` pixels (less the cell's padding) in ``view``."""
    widest = max((font_metrics.horizontalAdvance(line) for line in text.splitlines()), default=0)
    return widest + _CELL_PADDING > width


class TruncatedCellTooltips(QObject):
    """Shows a cell's full text as its tooltip when the text is elided."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Answer tooltip requests on item views' viewports; pass everything else on."""
        if event.type() != QEvent.Type.ToolTip or not isinstance(event, QHelpEvent):
            return False
        view = watched.parent()
        if not isinstance(view, QAbstractItemView) or watched is not view.viewport():
            return False
        index = view.indexAt(event.pos())
        if not index.isValid() or index.data(Qt.ItemDataRole.ToolTipRole):
            return False  # the view's own tooltip, if any, is shown as usual
        text = index.data(Qt.ItemDataRole.DisplayRole)
        if not isinstance(text, str) or not text:
            return False
        rect = view.visualRect(index)
        if not cell_is_cut(view, text, QFontMetrics(view.font()), rect.width()):
            return False
        QToolTip.showText(event.globalPos(), text, view.viewport(), rect)
        return True


_filter: TruncatedCellTooltips | None = None


def install(app: QApplication) -> None:
    """Install the filter once for the application."""
    global _filter
    if _filter is None:
        _filter = TruncatedCellTooltips(app)
        app.installEventFilter(_filter)
