"""F1: an overlay listing the keyboard shortcuts."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QVBoxLayout, QWidget


class ShortcutsDialog(QDialog):
    """A two-column table of shortcut → action."""

    def __init__(self, shortcuts: Sequence[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 18, 24, 14)
        title = QLabel("Keyboard shortcuts")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        grid = QGridLayout()
        grid.setHorizontalSpacing(24)
        grid.setVerticalSpacing(6)
        for row, (keys, what) in enumerate(shortcuts):
            k = QLabel(keys)
            k.setObjectName("badge")
            k.setAlignment(Qt.AlignmentFlag.AlignCenter)
            grid.addWidget(k, row, 0)
            grid.addWidget(QLabel(what), row, 1)
        layout.addLayout(grid)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
