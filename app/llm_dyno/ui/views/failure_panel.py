"""The failure panel: why a server died, what to do, and the log lines that show it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QFrame, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from llm_dyno.core.runtime.base import FailureReason
from llm_dyno.ui import theme


class FailurePanel(QFrame):
    """A red-edged card with the classified reason, the hint, the excerpt and the exit code."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("failureCard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 14, 20, 14)
        layout.setSpacing(6)
        self.kind = QLabel()
        self.kind.setObjectName("badge")
        self.kind.setAlignment(Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.kind, 0, Qt.AlignmentFlag.AlignLeft)
        self.summary = QLabel()
        self.summary.setObjectName("sectionTitle")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.hint)
        self.excerpt = QPlainTextEdit()
        self.excerpt.setReadOnly(True)
        self.excerpt.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.excerpt.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.excerpt.setMaximumHeight(180)
        layout.addWidget(self.excerpt)
        self.exit_code = QLabel()
        self.exit_code.setObjectName("sectionSubtitle")
        layout.addWidget(self.exit_code)
        self.reason: FailureReason | None = None
        self.hide()

    def set_reason(self, reason: FailureReason | None) -> None:
        """Show a failure (hide the panel for None)."""
        self.reason = reason
        if reason is None:
            self.hide()
            return
        self.kind.setText(reason.kind.value.replace("_", " "))
        c = theme.colors()  # a failure: the badge in the card's red, not the informational blue
        self.kind.setStyleSheet(f"background: {c.removed}; color: {c.red};")
        self.summary.setText(reason.summary)
        self.hint.setText(f"→ {reason.hint}" if reason.hint else "")
        self.hint.setVisible(bool(reason.hint))
        self.excerpt.setPlainText("\n".join(reason.excerpt))
        rows = sum(1 + len(line) // 40 for line in reason.excerpt)
        self.excerpt.setFixedHeight(max(90, min(240, 16 + rows * self.excerpt.fontMetrics().lineSpacing())))
        self.excerpt.setVisible(bool(reason.excerpt))
        self.exit_code.setText(f"Exit code {reason.exit_code}" if reason.exit_code is not None else "")
        self.show()
