"""The Diagnostics view's "Server…": a running server to read, given by URL (``diagnose --url``), and the
environment variable holding its key (``--api-key-env``); the key itself is never asked for or kept."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from llm_dyno.core.endpoint import Endpoint, key_reference_problem, url_endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.ui.messages import window_message


@dataclass(frozen=True)
class ServerChoice:
    """A server named by URL, and the variable its key is read from (None: no key)."""

    url: str
    api_key_env: str | None = None

    def endpoint(self) -> Endpoint:
        """The endpoint as ``diagnose --url URL --api-key-env VAR`` builds it; DynoError saying what is
        wrong (not an http(s) URL, not a variable name, a variable that is not set)."""
        problem = key_reference_problem(self.api_key_env)
        if problem is not None:
            raise DynoError(f"cannot send the key of {self.url}: {problem}", hint="export it, then Diagnose")
        return url_endpoint(self.url, "", api_key_env=self.api_key_env)


class ServerDialog(QDialog):
    """Asks for the URL and the key's variable; ``choice()`` is what to read (None: the profile's own)."""

    def __init__(self, current: ServerChoice | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Read a running server")
        self.setMinimumWidth(520)
        col = QVBoxLayout(self)
        intro = QLabel(
            "Its /metrics (two seconds, for the rates) and /version are read, as "
            "<code>llm-dyno diagnose --url</code> reads them; empty: the selected profile's own server "
            "when it runs."
        )
        intro.setWordWrap(True)
        col.addWidget(intro)
        form = QFormLayout()
        self.url_edit = QLineEdit(current.url if current else "")
        self.url_edit.setPlaceholderText("http://gpu-box:8000")
        form.addRow("URL", self.url_edit)
        self.key_edit = QLineEdit(current.api_key_env or "" if current else "")
        self.key_edit.setPlaceholderText("optional: the variable holding its key, e.g. VLLM_API_KEY")
        self.key_edit.setToolTip("The key is read from this environment variable when sent, never stored")
        form.addRow("API key variable", self.key_edit)
        col.addLayout(form)
        self.note = QLabel()
        self.note.setObjectName("fieldHint")
        self.note.setWordWrap(True)
        col.addWidget(self.note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.read_button = buttons.addButton("Read", QDialogButtonBox.ButtonRole.AcceptRole)
        self.read_button.setObjectName("primaryButton")
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        col.addWidget(buttons)

    def choice(self) -> ServerChoice | None:
        """The server as typed (None: none)."""
        url = self.url_edit.text().strip()
        return ServerChoice(url, self.key_edit.text().strip() or None) if url else None

    def _accept(self) -> None:
        choice = self.choice()
        try:
            if choice is not None:
                choice.endpoint()
        except DynoError as exc:
            self.note.setText(window_message(exc))
            return
        self.accept()
