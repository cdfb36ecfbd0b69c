"""“Attach to server…”: watch a vLLM server the app did not launch (URL, container, GPU, API key).

The server is remembered through :mod:`llm_dyno.core.telemetry.attach` (the API key itself never
is: only the name of the environment variable holding it).
"""

from __future__ import annotations

import re

from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.endpoint import key_reference_problem
from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.attach import AttachedServer, load_attached, remember_attached
from llm_dyno.ui.icons import icon
from llm_dyno.ui.messages import window_message

_URL = re.compile(r"^https?://[^\s/]+(:\d+)?(/\S*)?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def attach_action(parent: QWidget) -> QAction:
    """The toolbar / menu action that opens the dialog."""
    action = QAction(icon("dashboard"), "Attach…", parent)
    action.setToolTip("Attach to a running vLLM server by URL and watch its telemetry")
    return action


class AttachDialog(QDialog):
    """Asks for a server; ``server`` holds it (remembered) after OK."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Attach to server")
        self.setMinimumWidth(480)
        self.server: AttachedServer | None = None
        col = QVBoxLayout(self)
        form = QFormLayout()
        self.remembered = QComboBox()
        self.known: list[AttachedServer] = []
        try:
            self.known = load_attached()
        except DynoError as exc:
            self.remembered.setToolTip(window_message(exc))
        self.remembered.addItem("—" if self.known else "none yet")
        for s in self.known:
            self.remembered.addItem(s.label)
        self.remembered.setEnabled(bool(self.known))
        self.remembered.currentIndexChanged.connect(self._pick)
        form.addRow("Remembered", self.remembered)
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://gpu-box:8000")
        form.addRow("URL", self.url)
        self.name = QLineEdit()
        self.name.setPlaceholderText("optional, e.g. qwen3 on gpu-box")
        form.addRow("Name", self.name)
        self.container = QLineEdit()
        self.container.setPlaceholderText("optional: the server's container")
        form.addRow("Container", self.container)
        self.gpu = QSpinBox()
        self.gpu.setRange(-1, 63)
        self.gpu.setSpecialValueText("none (no GPU plots)")
        self.gpu.setValue(0)
        form.addRow("GPU index", self.gpu)
        self.via_container = QCheckBox("GPU via the container")
        self.via_container.setToolTip(
            "Read the GPU with nvidia-smi inside the container (docker exec on the engine of "
            "DOCKER_HOST / the active docker context), for a server on another machine. Used anyway "
            "when this machine has no NVIDIA driver. The GPU index is then the container's own (0 for "
            "a container given one GPU)."
        )
        self.via_container.setEnabled(False)
        self.container.textChanged.connect(lambda text: self.via_container.setEnabled(bool(text.strip())))
        form.addRow("", self.via_container)
        self.key_env = QLineEdit()
        self.key_env.setPlaceholderText("optional, e.g. VLLM_API_KEY (the variable's name, not the key)")
        form.addRow("API-key variable", self.key_env)
        col.addLayout(form)
        self.error = QLabel()
        self.error.setStyleSheet("color: #dc2626;")
        self.error.setWordWrap(True)
        self.error.hide()
        col.addWidget(self.error)
        ok, cancel = QDialogButtonBox.StandardButton.Ok, QDialogButtonBox.StandardButton.Cancel
        buttons = QDialogButtonBox(ok | cancel)
        buttons.button(ok).setText("Attach")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        col.addWidget(buttons)

    def _pick(self, index: int) -> None:
        if 1 <= index <= len(self.known):
            s = self.known[index - 1]
            self.url.setText(s.url)
            self.name.setText(s.name or "")
            self.container.setText(s.container or "")
            self.gpu.setValue(-1 if s.gpu_index is None else s.gpu_index)
            self.via_container.setChecked(s.gpu_via_container)
            self.key_env.setText(s.api_key_env or "")

    def problem(self) -> str | None:
        """What is wrong with the entered fields, or None."""
        url = self.url.text().strip()
        if not _URL.match(url):
            return "Enter the server's URL, e.g. http://gpu-box:8000"
        env = self.key_env.text().strip()
        if env and not _ENV_NAME.match(env):
            return f"“{env}” is not an environment variable name (letters, digits, _)"
        if key_reference_problem(env) is not None:  # the check every job makes before a request
            return f"${env} is not set in LLM Dyno's environment: set it and restart, or leave it empty"
        return None

    def entered(self) -> AttachedServer:
        """The server as entered (not validated)."""
        return AttachedServer(
            url=self.url.text().strip().rstrip("/"),
            container=self.container.text().strip() or None,
            gpu_index=None if self.gpu.value() < 0 else self.gpu.value(),
            api_key_env=self.key_env.text().strip() or None,
            name=self.name.text().strip() or None,
            gpu_via_container=self.via_container.isChecked() and bool(self.container.text().strip()),
        )

    def accept(self) -> None:
        problem = self.problem()
        if problem is None:
            server = self.entered()
            try:
                remember_attached(server)
            except DynoError as exc:
                problem = f"Cannot remember the server: {exc}"
            else:
                self.server = server
                super().accept()
                return
        self.error.setText(problem)
        self.error.show()
