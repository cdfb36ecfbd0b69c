"""A friendly empty state: an icon, a title, what will be here, and optional actions."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from llm_dyno.ui import theme
from llm_dyno.ui.icons import icon


class EmptyState(QWidget):
    """Centered card explaining an empty view (or a view still to come)."""

    def __init__(
        self,
        icon_name: str,
        title: str,
        text: str,
        bullets: Sequence[str] = (),
        badge: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(32, 32, 32, 32)
        outer.addStretch(1)
        row = QHBoxLayout()
        row.addStretch(1)
        self.card = QFrame()
        self.card.setObjectName("emptyCard")
        self.card.setMaximumWidth(620)
        self.card.setMinimumWidth(420)
        row.addWidget(self.card, 3)
        row.addStretch(1)
        outer.addLayout(row)
        outer.addStretch(2)

        layout = QVBoxLayout(self.card)
        layout.setContentsMargins(36, 30, 36, 30)
        layout.setSpacing(10)
        pic = QLabel()
        pic.setPixmap(icon(icon_name, theme.colors().accent).pixmap(44, 44))
        pic.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(pic)
        if badge:
            b = QLabel(badge)
            b.setObjectName("badge")
            b.setAlignment(Qt.AlignmentFlag.AlignCenter)
            brow = QHBoxLayout()
            brow.addStretch(1)
            brow.addWidget(b)
            brow.addStretch(1)
            layout.addLayout(brow)
        self.title = QLabel(title)
        self.title.setObjectName("emptyTitle")
        self.title.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.title.setWordWrap(True)
        layout.addWidget(self.title)
        self.text = QLabel(text)
        self.text.setObjectName("emptyText")
        self.text.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        if bullets:
            layout.addSpacing(6)
            for line in bullets:
                lab = QLabel(f"•  {line}")
                lab.setObjectName("emptyBullet")
                lab.setWordWrap(True)
                layout.addWidget(lab)
        self.action_row = QHBoxLayout()
        self.action_row.addStretch(1)
        layout.addSpacing(6)
        layout.addLayout(self.action_row)

    def add_action(self, text: str, primary: bool = False) -> QPushButton:
        """Add a button under the text; connect its ``clicked``."""
        button = QPushButton(text)
        if primary:
            button.setObjectName("primaryButton")
        self.action_row.insertWidget(self.action_row.count(), button)
        if self.action_row.itemAt(self.action_row.count() - 1).spacerItem() is None:
            self.action_row.addStretch(1)
        return button
