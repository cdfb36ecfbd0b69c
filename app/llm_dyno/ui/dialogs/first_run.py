"""First run: offer the shipped example profiles, each with a checkbox."""

from __future__ import annotations

import re
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.profiles.model import Profile
from llm_dyno.ui.text import subtitle_of


def first_sentence(notes: str) -> str:
    """The first sentence of a profile's notes, whole: the notes wrap at any word, so their first line
    may end mid-sentence ("… (no MTP): the")."""
    text = " ".join(notes.strip().split("\n\n")[0].split())
    end = re.search(r"[.!?](?=\s)", text)
    return text[: end.end()] if end else text


class FirstRunDialog(QDialog):
    """Welcome, and pick which example profiles to install."""

    def __init__(self, shipped: Sequence[Profile], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Welcome to LLM Dyno")
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 20, 24, 16)
        layout.setSpacing(10)
        title = QLabel("Welcome to LLM Dyno")
        title.setObjectName("emptyTitle")
        layout.addWidget(title)
        text = QLabel(
            "A profile is one way to launch vLLM: image, model, flags, GPUs and power limit. "
            "Start from these examples, or import your own docker-compose file later."
        )
        text.setObjectName("emptyText")
        text.setWordWrap(True)
        layout.addWidget(text)
        self.boxes: dict[str, QCheckBox] = {}
        for profile in shipped:
            box = QCheckBox(profile.name)
            box.setChecked(True)
            box.setStyleSheet("font-weight: 600;")
            layout.addWidget(box)
            detail = QLabel(first_sentence(profile.notes) if profile.notes else subtitle_of(profile))
            detail.setObjectName("fieldHelp")
            detail.setWordWrap(True)
            detail.setContentsMargins(26, 0, 0, 4)
            detail.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
            layout.addWidget(detail)
            self.boxes[profile.name] = box
        buttons = QDialogButtonBox()
        add = buttons.addButton("Add selected profiles", QDialogButtonBox.ButtonRole.AcceptRole)
        add.setObjectName("primaryButton")
        buttons.addButton("Start empty", QDialogButtonBox.ButtonRole.RejectRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def chosen(self) -> list[str]:
        """Names of the profiles to install."""
        return [name for name, box in self.boxes.items() if box.isChecked()]
