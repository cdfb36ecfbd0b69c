"""Export a profile in one of the formats of :data:`~llm_dyno.core.profiles.export_formats.EXPORT_FORMATS`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles import export_formats
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.profiles.store import file_stem
from llm_dyno.ui.messages import window_message


class ExportDialog(QDialog):
    """Shows the export and copies it or writes it to a file."""

    def __init__(self, profile: Profile, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.profile = profile
        self.setWindowTitle(f"Export — {profile.name}")
        self.resize(820, 560)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("Format"))
        self.format_box = QComboBox()
        for key, fmt in export_formats.EXPORT_FORMATS.items():
            self.format_box.addItem(fmt.description, key)
        self.format_box.currentIndexChanged.connect(lambda _i: self.refresh())
        row.addWidget(self.format_box)
        row.addStretch(1)
        layout.addLayout(row)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        layout.addWidget(self.text, 1)
        self.error = QLabel()
        self.error.setObjectName("fieldHint")
        self.error.setWordWrap(True)
        layout.addWidget(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = buttons.addButton("Copy to clipboard", QDialogButtonBox.ButtonRole.ActionRole)
        self.save_button = buttons.addButton("Save to file…", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy)
        self.save_button.clicked.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.refresh()

    def refresh(self) -> None:
        """Render the chosen format."""
        key = str(self.format_box.currentData())
        try:
            text = export_formats.export_profile(self.profile, key)
        except DynoError as exc:
            self.text.clear()
            self.error.setText(window_message(exc))
            self.copy_button.setEnabled(False)
            self.save_button.setEnabled(False)
            return
        self.error.clear()
        self.text.setPlainText(text)
        self.copy_button.setEnabled(True)
        self.save_button.setEnabled(True)

    def copy(self) -> None:
        """Put the export on the clipboard."""
        QGuiApplication.clipboard().setText(self.text.toPlainText())

    def _save(self) -> None:
        key = str(self.format_box.currentData())
        suggested = str(
            Path.home() / (file_stem(self.profile.name) + export_formats.EXPORT_FORMATS[key].suffix)
        )
        path, _ = QFileDialog.getSaveFileName(self, "Save export", suggested)
        if path:
            try:
                Path(path).write_text(self.text.toPlainText(), encoding="utf-8")
            except OSError as exc:
                self.error.setText(f"cannot write {path}: {exc}")
