"""A warnings banner: profile files that do not load, and other files the window could not read at
start-up (settings, history), each as ``file:line: message``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from llm_dyno.core.errors import DynoError
from llm_dyno.ui import theme
from llm_dyno.ui.icons import icon


def describe(error: DynoError) -> str:
    """``name.yaml:12: message (field 'x')`` — short file name, line, message."""
    where = error.where
    if where is None:
        return error.message
    head = Path(where.file).name if where.file else ""
    if where.line:
        head += f":{where.line}"
    field = f" (field '{where.field}')" if where.field else ""
    return f"{head}: {error.message}{field}" if head else f"{error.message}{field}"


def describe_full(error: DynoError) -> str:
    """Like :func:`describe` with the full path (a file outside the profiles folder)."""
    where = error.where
    text = error.message
    if where is not None and str(where):
        text = f"{where}: {text}"
    return text


class WarningBanner(QFrame):
    """Amber banner listing problems; hidden when there are none; the user can dismiss it."""

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("warningBanner")
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 8, 8, 8)
        pic = QLabel()
        pic.setPixmap(icon("warning", theme.colors().amber).pixmap(20, 20))
        pic.setAlignment(Qt.AlignmentFlag.AlignTop)
        row.addWidget(pic)
        col = QVBoxLayout()
        col.setSpacing(2)
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: 600;")
        col.addWidget(self.title)
        self.body = QLabel()
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.body)
        row.addLayout(col, 1)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip("Hide")
        close.clicked.connect(self._dismiss)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.lines: list[str] = []
        # problems found at start-up outside the profiles folder; they stay listed until dismissed
        self.startup: list[str] = []
        self._profile_lines: list[str] = []
        self.hide()

    def add_startup_problems(self, errors: Sequence[DynoError]) -> None:
        """Also list these (a broken settings file, a damaged history) with the profile errors."""
        self.startup.extend(describe_full(e) for e in errors)
        self._show()

    def set_errors(self, errors: Sequence[DynoError]) -> None:
        """Show these problems (hide the banner when there are none)."""
        self._profile_lines = [describe(e) for e in errors]
        self._show()

    def _show(self) -> None:
        self.lines = self.startup + self._profile_lines
        n = len(self._profile_lines)
        if not self.startup:
            self.title.setText(f"{n} profile file{'s' if n != 1 else ''} could not be loaded")
        else:
            total = len(self.lines)
            self.title.setText(
                f"{total} file{'s' if total != 1 else ''} could not be read; nothing was changed"
            )
        self.body.setText("\n".join(self.lines))
        self.setVisible(bool(self.lines))

    def _dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()
