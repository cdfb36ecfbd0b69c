"""The Benchmark view's "Or attach to" row: a server not started from a profile, by URL, served model
name and the environment variable that holds its API key (the key itself is never stored)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QWidget

from llm_dyno.core.endpoint import Endpoint, url_endpoint
from llm_dyno.core.errors import DynoError


class AttachRow(QWidget):
    """URL, model and key-variable fields; ``changed`` on every edit."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Or attach to"))
        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText("http://host:8000 (a server not started from a profile)")
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("served model name")
        self.model_edit.setMaximumWidth(220)
        self.key_edit = QLineEdit()
        self.key_edit.setPlaceholderText("API key variable (optional)")
        self.key_edit.setToolTip(
            "The environment variable that holds the server's API key, e.g. VLLM_API_KEY. The key "
            "itself is never stored."
        )
        self.key_edit.setMaximumWidth(200)
        row.addWidget(self.url_edit, 2)
        row.addWidget(self.model_edit, 1)
        row.addWidget(self.key_edit, 1)
        for edit in (self.url_edit, self.model_edit, self.key_edit):
            edit.textChanged.connect(lambda _t: self.changed.emit())

    def url(self) -> str:
        """The URL typed, stripped ("" when none)."""
        return self.url_edit.text().strip()

    def endpoint(self, default_model: str | None) -> Endpoint | None:
        """The attached server, or None while the URL or the model is missing or the URL is not one."""
        url = self.url()
        model = self.model_edit.text().strip() or (default_model or "")
        if not url or not model:
            return None
        try:
            return url_endpoint(url, model, api_key_env=self.key_edit.text().strip() or None)
        except DynoError:
            return None
