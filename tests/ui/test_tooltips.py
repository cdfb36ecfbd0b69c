"""Cut-off table cells show their full text on hover (the app-wide filter that theme.apply installs)."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QTableWidget, QTableWidgetItem, QToolTip

from llm_dyno.ui import theme

LONG = "vllm/vllm-openai:v0.11.0 · Qwen3.6-27B-int4-AutoRound · fp8_e5m2 · MTP n=3"


def hover(table: QTableWidget, row: int, col: int) -> bool:
    rect = table.visualRect(table.model().index(row, col))
    pos = rect.center()
    event = QHelpEvent(QEvent.Type.ToolTip, pos, table.viewport().mapToGlobal(pos))
    return QApplication.sendEvent(table.viewport(), event)


def test_only_cut_cells_get_their_text_as_tooltip(qtbot) -> None:  # type: ignore[no-untyped-def]
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    table = QTableWidget(2, 2)
    qtbot.addWidget(table)
    table.setColumnWidth(0, 90)
    table.setColumnWidth(1, 90)
    table.setItem(0, 0, QTableWidgetItem(LONG))
    table.setItem(0, 1, QTableWidgetItem("42.1"))
    own = QTableWidgetItem(LONG)
    own.setToolTip("the item's own tooltip")
    table.setItem(1, 0, own)
    table.resize(300, 200)
    table.show()
    qtbot.waitExposed(table)
    assert hover(table, 0, 0)
    qtbot.waitUntil(lambda: QToolTip.text() == LONG, timeout=2000)
    QToolTip.hideText()
    hover(table, 0, 1)
    assert QToolTip.text() != "42.1"  # it fits: no tooltip added
    hover(table, 1, 0)
    qtbot.waitUntil(lambda: QToolTip.text() == "the item's own tooltip", timeout=2000)  # its own wins
