"""The Logs view: follow, search with highlight, level filter, colours by level, copy, line count.

Lines arrive in batches (see :class:`~llm_dyno.ui.servers.ServerBridge`). Each profile keeps its last
``KEEP_LINES`` lines; the text view shows at most ``SHOW_LINES`` (``setMaximumBlockCount``), so 100k
lines never freeze the window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from PySide6.QtCore import QRegularExpression, Qt
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QGuiApplication,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.runtime.logformats import is_poll_access_line, line_level
from llm_dyno.ui import theme
from llm_dyno.ui.widgets.empty_state import EmptyState

KEEP_LINES = 100_000
SHOW_LINES = 20_000
LEVELS = {"All levels": 0, "INFO and above": 1, "WARNING and above": 2, "ERROR only": 3}
_RANK = {"DEBUG": 0, "INFO": 1, "WARNING": 2, "ERROR": 3, "CRITICAL": 3}


class _Highlighter(QSyntaxHighlighter):
    """Warnings amber, errors red; the search term marked."""

    def __init__(self, doc: QTextDocument) -> None:
        super().__init__(doc)
        self.needle = ""

    def highlightBlock(self, text: str) -> None:
        c = theme.colors()
        level = line_level(text)
        if level in ("ERROR", "CRITICAL") or text.startswith("Traceback"):
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(c.red))
            self.setFormat(0, len(text), fmt)
        elif level == "WARNING":
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(c.amber))
            self.setFormat(0, len(text), fmt)
        if self.needle:
            mark = QTextCharFormat()
            mark.setBackground(QColor("#fde047"))
            mark.setForeground(QColor("#111111"))
            lower, n = text.lower(), len(self.needle)
            i = lower.find(self.needle)
            while i >= 0:
                self.setFormat(i, n, mark)
                i = lower.find(self.needle, i + n)


class LogsView(QWidget):
    """Shows the log of the selected profile's server."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._logs: dict[str, deque[tuple[int, bool, str]]] = {}  # (level rank, is a poll, line)
        self._totals: dict[str, int] = {}
        self._last_rank: dict[str, int] = {}
        self.profile: str | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        bar = QWidget()
        bar.setObjectName("logBar")
        bar.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        row = QHBoxLayout(bar)
        row.setContentsMargins(16, 8, 16, 8)
        self.follow = QCheckBox("Follow")
        self.follow.setChecked(True)
        self.follow.setToolTip("Keep the newest line in view")
        row.addWidget(self.follow)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search the log")
        self.search.setClearButtonEnabled(True)
        self.search.setMaximumWidth(320)
        self.search.textChanged.connect(self._search_changed)
        self.search.returnPressed.connect(self.find_next)
        row.addWidget(self.search, 1)
        self.level = QComboBox()
        self.level.addItems(list(LEVELS))
        self.level.currentIndexChanged.connect(lambda _i: self._rebuild())
        row.addWidget(self.level)
        self.hide_polls = QCheckBox("Hide /metrics polls")
        self.hide_polls.setChecked(True)
        self.hide_polls.setToolTip(
            "Hide the server's access lines for GET /metrics and GET /health: the app's own polling"
        )
        self.hide_polls.toggled.connect(lambda _on: self._rebuild())
        row.addWidget(self.hide_polls)
        row.addStretch(1)
        self.count = QLabel()
        self.count.setObjectName("sectionSubtitle")
        row.addWidget(self.count)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the selection, or every shown line")
        self.copy_button.clicked.connect(self.copy)
        row.addWidget(self.copy_button)
        layout.addWidget(bar)
        self.stack = QStackedWidget()
        self.empty = EmptyState(
            "logs",
            "No log yet",
            "Launch the profile to follow its vLLM output here.",
            [
                "Follow, search and filter by level",
                "Warnings in amber, errors in red",
                "Copy lines for a bug report",
            ],
        )
        self.stack.addWidget(self.empty)
        self.text = QPlainTextEdit()
        self.text.setObjectName("logText")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setMaximumBlockCount(SHOW_LINES)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setUndoRedoEnabled(False)
        self._highlighter = _Highlighter(self.text.document())
        self.stack.addWidget(self.text)
        layout.addWidget(self.stack, 1)
        self._update_count()

    # ---- data ----------------------------------------------------------------------------------
    def _rank(self, profile: str, line: str) -> int:
        level = line_level(line)
        if level is None:  # continuation lines (tracebacks) inherit the level of the line above
            if line.startswith("Traceback"):
                rank = 3
            else:
                return self._last_rank.get(profile, 1)
        else:
            rank = _RANK.get(level, 1)
        self._last_rank[profile] = rank
        return rank

    def reset(self, profile: str) -> None:
        """Forget a profile's lines (a new launch starts a new log)."""
        self._logs.pop(profile, None)
        self._totals.pop(profile, None)
        self._last_rank.pop(profile, None)
        if profile == self.profile:
            self._rebuild()

    def append(self, profile: str, lines: Iterable[str]) -> None:
        """New lines of a profile's server."""
        store = self._logs.setdefault(profile, deque(maxlen=KEEP_LINES))
        added = [(self._rank(profile, line), is_poll_access_line(line), line) for line in lines]
        store.extend(added)
        self._totals[profile] = self._totals.get(profile, 0) + len(added)
        if profile != self.profile:
            return
        shown = self._shown(added)
        if shown:
            self.stack.setCurrentWidget(self.text)
            bar = self.text.verticalScrollBar()
            keep = bar.value()
            self.text.appendPlainText("\n".join(shown))
            if self.follow.isChecked():
                bar.setValue(bar.maximum())
                self._scroll_left()
            else:
                bar.setValue(keep)
        self._update_count()

    def _shown(self, entries: Iterable[tuple[int, bool, str]]) -> list[str]:
        minimum, hide_polls = self._min_rank(), self.hide_polls.isChecked()
        return [line for rank, poll, line in entries if rank >= minimum and not (poll and hide_polls)]

    def _scroll_left(self) -> None:
        # appending moves the view to the end of the last (long) line: the start of lines is what reads
        self.text.horizontalScrollBar().setValue(0)

    def show_profile(self, profile: str | None) -> None:
        """Show another profile's log."""
        self.profile = profile
        self._rebuild()

    def lines(self) -> list[str]:
        """The lines shown now (after the level filter)."""
        return (
            self.text.toPlainText().split("\n") if self.text.blockCount() and self.text.toPlainText() else []
        )

    # ---- actions -------------------------------------------------------------------------------
    def _min_rank(self) -> int:
        return LEVELS[self.level.currentText()]

    def _rebuild(self) -> None:
        store = self._logs.get(self.profile or "", deque())
        shown = self._shown(store)[-SHOW_LINES:]
        self.text.setPlainText("\n".join(shown))
        self.stack.setCurrentWidget(self.text if store else self.empty)
        if self.follow.isChecked():
            self.text.verticalScrollBar().setValue(self.text.verticalScrollBar().maximum())
        self._scroll_left()
        self._update_count()

    def _search_changed(self, text: str) -> None:
        self._highlighter.needle = text.strip().lower()
        self._highlighter.rehighlight()
        if text.strip():
            self.find_next()

    def find_next(self) -> bool:
        """Move to the next match of the search text (wrapping); False when there is none."""
        needle = self.search.text().strip()
        if not needle:
            return False
        pattern = QRegularExpression(
            QRegularExpression.escape(needle), QRegularExpression.PatternOption.CaseInsensitiveOption
        )
        if self.text.find(pattern):
            self.follow.setChecked(False)
            return True
        cursor = self.text.textCursor()
        cursor.movePosition(cursor.MoveOperation.Start)
        self.text.setTextCursor(cursor)
        found = self.text.find(pattern)
        if found:
            self.follow.setChecked(False)
        return found

    def copy(self) -> None:
        """Copy the selected text, or all shown lines."""
        selected = self.text.textCursor().selectedText().replace("\u2029", "\n")
        QGuiApplication.clipboard().setText(selected or self.text.toPlainText())

    def _update_count(self) -> None:
        total = self._totals.get(self.profile or "", 0)
        shown = self.text.blockCount() if self.text.toPlainText() else 0
        if total == shown:
            self.count.setText(f"{total:,} lines")
        else:
            self.count.setText(f"{shown:,} of {total:,} lines")
