"""The YAML tab: the profile as text, validated as you type (debounced), the bad line highlighted."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontDatabase, QTextCursor, QTextFormat
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTextEdit, QVBoxLayout, QWidget

from llm_dyno.ui import theme

DEBOUNCE_MS = 300


class YamlEditor(QWidget):
    """A plain-text YAML editor. Emits ``edited(text)`` once typing pauses for ``DEBOUNCE_MS``."""

    edited = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(4)
        self.text = QPlainTextEdit()
        self.text.setObjectName("yamlText")
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.0))
        self.text.setFont(font)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setTabChangesFocus(False)
        self.text.setTabStopDistance(self.text.fontMetrics().horizontalAdvance(" ") * 2)
        layout.addWidget(self.text, 1)
        self.status = QLabel()
        self.status.setObjectName("yamlOk")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(lambda: self.edited.emit(self.text.toPlainText()))
        self._setting = False
        self.text.textChanged.connect(self._changed)
        self.error_line: int | None = None

    def _changed(self) -> None:
        if not self._setting:
            self._timer.start()

    def flush(self) -> None:
        """Emit a pending edit now (before saving or switching tabs)."""
        if self._timer.isActive():
            self._timer.stop()
            self.edited.emit(self.text.toPlainText())

    def set_text(self, text: str) -> None:
        """Replace the text (keeps the cursor line when it can) without emitting ``edited``."""
        if text == self.text.toPlainText():
            return
        line = self.text.textCursor().blockNumber()
        self._setting = True
        try:
            self.text.setPlainText(text)
        finally:
            self._setting = False
        block = self.text.document().findBlockByNumber(min(line, self.text.blockCount() - 1))
        self.text.setTextCursor(QTextCursor(block))

    def show_error(self, message: str | None, line: int | None = None) -> None:
        """Show the validation result; highlight ``line`` (1-based) when there is one."""
        self.error_line = line if message else None
        c = theme.colors()
        if message:
            self.status.setObjectName("yamlError")
            prefix = f"Line {line}: " if line else ""
            self.status.setText(f"⚠ {prefix}{message}")
        else:
            self.status.setObjectName("yamlOk")
            self.status.setText("✓ Valid profile")
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)
        selections = []
        if message and line:
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(QColor(c.removed))
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            block = self.text.document().findBlockByNumber(line - 1)
            cursor = QTextCursor(block)
            sel.cursor = cursor
            selections.append(sel)
        self.text.setExtraSelections(selections)
