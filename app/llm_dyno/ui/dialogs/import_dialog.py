"""Import a profile from a file or the clipboard: preview, detected kind, warnings, service and name."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bounded_read import MAX_IMPORT_BYTES, read_text_capped
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.importers import ImportResult, detect_kind, import_text
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.profiles.yamlio import load_with_lines
from llm_dyno.ui.messages import window_message

KIND_LABELS = {
    "compose": "docker-compose file",
    "docker-run": "docker run command",
    "vllm-serve": "vllm serve command",
}


def compose_services(text: str) -> list[str]:
    """The service names of a compose document (empty when it is not one)."""
    try:
        data, _ = load_with_lines(text)
    except DynoError:
        return []
    services = data.get("services") if isinstance(data, dict) else None
    return [str(s) for s in services] if isinstance(services, dict) else []


def preview_import(
    text: str,
    *,
    source: str | None = None,
    name: str | None = None,
    service: str | None = None,
    trust_host: bool = False,
    env_file_outside: bool = False,
) -> ImportResult:
    """What the dialog imports: the core importer with the dialog's choices (raises DynoError).

    A file opened from disk is read in its folder (a compose project's .env, relative paths, name).
    ``trust_host``: take the Docker engine the file names (else dropped with a warning);
    ``env_file_outside``: read its env files outside that folder (else refused)."""
    base = Path(source).resolve().parent if source and Path(source).is_file() else None
    return import_text(
        text,
        source=source,
        name=name or None,
        service=service or None,
        base_dir=base,
        trust_host=trust_host,
        env_file_outside=env_file_outside,
    )


class ImportDialog(QDialog):
    """Paste or open a compose file / ``docker run`` / ``vllm serve``; see the profile it becomes."""

    def __init__(self, taken_names: Collection[str] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import profile")
        self.resize(980, 640)
        self._taken = set(taken_names)
        self._source: str | None = None
        self.result_: ImportResult | None = None
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

        layout = QVBoxLayout(self)
        intro = QLabel(
            "Paste a <b>docker-compose.yml</b>, a <b>docker run …</b> line or a <b>vllm serve …</b> command, "
            "or open a file. The engine flags are kept exactly as written."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        buttons_row = QHBoxLayout()
        open_button = QPushButton("Open file…")
        open_button.clicked.connect(self._open)
        paste_button = QPushButton("Paste from clipboard")
        paste_button.clicked.connect(self._paste)
        buttons_row.addWidget(open_button)
        buttons_row.addWidget(paste_button)
        buttons_row.addStretch(1)
        self.kind_label = QLabel()
        self.kind_label.setObjectName("badge")
        buttons_row.addWidget(self.kind_label)
        layout.addLayout(buttons_row)

        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        lcol = QVBoxLayout(left)
        lcol.setContentsMargins(0, 0, 0, 0)
        lcol.addWidget(QLabel("Source"))
        self.source_text = QPlainTextEdit()
        self.source_text.setFont(mono)
        self.source_text.setPlaceholderText(
            "docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest --model …"
        )
        self.source_text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        lcol.addWidget(self.source_text, 1)
        split.addWidget(left)
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        form = QFormLayout()
        self.service_box = QComboBox()
        self.service_box.currentIndexChanged.connect(lambda _i: self._schedule())
        form.addRow("Service", self.service_box)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("from the source")
        self.name_edit.textEdited.connect(lambda _t: self._schedule())
        form.addRow("Name", self.name_edit)
        self.trust_host = QCheckBox("Use the Docker engine the file names")
        self.trust_host.setToolTip(
            "That engine receives your HF_TOKEN and VLLM_API_KEY at launch; unchecked, the profile uses "
            "your local engine and the warnings name the one the file wanted"
        )
        self.trust_host.toggled.connect(lambda _c: self._schedule())
        form.addRow("Engine", self.trust_host)
        self.env_outside = QCheckBox("Read env files outside the project folder")
        self.env_outside.setToolTip(
            "The file's env_file entries may name files elsewhere on this machine; their variables go "
            "into the container. Never /proc, /sys or /dev, never a FIFO; secrets still become references"
        )
        self.env_outside.toggled.connect(lambda _c: self._schedule())
        form.addRow("Env files", self.env_outside)
        rcol.addLayout(form)
        rcol.addWidget(QLabel("Profile preview"))
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setFont(mono)
        self.preview.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        rcol.addWidget(self.preview, 1)
        self.warnings = QLabel()
        self.warnings.setObjectName("fieldHelp")
        self.warnings.setWordWrap(True)
        rcol.addWidget(self.warnings)
        self.error = QLabel()
        self.error.setObjectName("fieldHint")
        self.error.setWordWrap(True)
        rcol.addWidget(self.error)
        split.addWidget(right)
        split.setSizes([480, 480])
        layout.addWidget(split, 1)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.import_button = self.buttons.addButton("Import", QDialogButtonBox.ButtonRole.AcceptRole)
        self.import_button.setObjectName("primaryButton")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self.refresh)
        self.source_text.textChanged.connect(self._schedule)
        self.refresh()

    @property
    def profile(self) -> Profile | None:
        """The profile to import (None while the source does not import)."""
        return self.result_.profile if self.result_ is not None else None

    def set_source(self, text: str, source: str | None = None) -> None:
        """Load text (as if pasted) and preview it at once."""
        self._source = source
        self.source_text.setPlainText(text)
        self.refresh()

    def _open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Open compose file or command",
            str(Path.home()),
            "Compose / shell (*.yml *.yaml *.sh *.txt);;All (*)",
        )
        if path:
            try:
                self.set_source(read_text_capped(Path(path), MAX_IMPORT_BYTES, "the file to import"), path)
            except DynoError as exc:
                self.error.setText(str(exc))

    def _paste(self) -> None:
        self.set_source(QGuiApplication.clipboard().text(), "clipboard")

    def _schedule(self) -> None:
        self._timer.start()

    def refresh(self) -> None:
        """Re-run the import with the current text and choices."""
        self._timer.stop()
        text = self.source_text.toPlainText()
        self.result_ = None
        self.preview.clear()
        self.warnings.clear()
        self.error.clear()
        if not text.strip():
            self.kind_label.hide()
            self.import_button.setEnabled(False)
            self._fill_services([])
            return
        kind = detect_kind(text)
        self.kind_label.setText(f"Detected: {KIND_LABELS.get(kind, kind)}")
        self.kind_label.show()
        self._fill_services(compose_services(text) if kind == "compose" else [])
        try:
            result = preview_import(
                text,
                source=self._source,
                name=self.name_edit.text().strip(),
                service=self.service_box.currentData(),
                trust_host=self.trust_host.isChecked(),
                env_file_outside=self.env_outside.isChecked(),
            )
        except DynoError as exc:
            self.error.setText(window_message(exc))
            gathered = getattr(exc, "warnings", ())  # e.g. the unset variables behind the failure
            if gathered:
                self.warnings.setText("\n".join(f"⚠ {w}" for w in gathered))
            self.import_button.setEnabled(False)
            return
        self.result_ = result
        self.preview.setPlainText(result.profile.to_yaml())
        if result.service and self.service_box.currentData() is None:
            self.service_box.blockSignals(True)
            self.service_box.setCurrentIndex(max(0, self.service_box.findData(result.service)))
            self.service_box.blockSignals(False)
        if result.warnings:
            self.warnings.setText("\n".join(f"⚠ {w}" for w in result.warnings))
        if result.profile.name in self._taken:
            self.error.setText(
                f"A profile named '{result.profile.name}' already exists: choose another name."
            )
            self.import_button.setEnabled(False)
            return
        self.import_button.setEnabled(True)

    def _fill_services(self, services: list[str]) -> None:
        current = self.service_box.currentData()
        if [self.service_box.itemData(i) for i in range(1, self.service_box.count())] == services:
            return
        self.service_box.blockSignals(True)
        self.service_box.clear()
        self.service_box.addItem("automatic (the one running vLLM)", None)
        for s in services:
            self.service_box.addItem(s, s)
        if current in services:
            self.service_box.setCurrentIndex(self.service_box.findData(current))
        self.service_box.blockSignals(False)
        self.service_box.setEnabled(len(services) > 1)
