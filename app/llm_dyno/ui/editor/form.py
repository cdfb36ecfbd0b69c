"""The profile form: the common fields in cards, each writing one thing of the draft."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.runtime.launch_spec import PlanWarning
from llm_dyno.ui import theme
from llm_dyno.ui.editor.draft import Draft
from llm_dyno.ui.editor.memory_panel import MemoryFitPanel
from llm_dyno.ui.editor.widgets import EnvTable, Field, ListEditor, Section, TriState
from llm_dyno.ui.text import warnings_text

KV_DTYPES = ["", "auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16"]
QUANTIZATIONS = [
    "",
    "auto_round",
    "awq",
    "awq_marlin",
    "gptq",
    "gptq_marlin",
    "fp8",
    "compressed-tensors",
    "bitsandbytes",
    "gguf",
    "modelopt",
]
DTYPES = ["", "auto", "float16", "bfloat16", "float32", "half"]
SPEC_METHODS = ["", "ngram", "mtp", "eagle", "eagle3", "draft_model", "medusa", "suffix"]
IPC_MODES = ["", "host", "private", "shareable"]

# What a profile with no --host really listens on (core/profiles/exposure.py says the same): vLLM binds
# every interface inside its container, whose port this app publishes on 127.0.0.1 unless
# docker.bind: file; a local process is given --host 127.0.0.1.
HOST_PLACEHOLDERS = {
    "docker": "0.0.0.0 in the container; its port published on 127.0.0.1",
    "process": "127.0.0.1 (this machine only)",
}


class ProfileForm(QScrollArea):
    """Cards of fields for a profile. Emits ``fieldEdited(key, value)`` on every user edit."""

    fieldEdited = Signal(str, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("formScroll")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content = QWidget()
        content.setObjectName("formContent")
        self._layout = QVBoxLayout(content)
        self._layout.setContentsMargins(20, 16, 20, 24)
        self._layout.setSpacing(14)
        self.setWidget(content)
        self.fields: dict[str, Field] = {}
        self._loading = False
        self.general_error = QLabel()
        self.general_error.setObjectName("fieldHint")
        self.general_error.setWordWrap(True)
        self.general_error.hide()
        self._layout.addWidget(self.general_error)
        # what the launch would warn about (loopback ports, relative paths, no GPUs…), as `plan` says
        self.plan_warnings = QLabel()
        self.plan_warnings.setObjectName("planWarnings")
        self.plan_warnings.setWordWrap(True)
        self.plan_warnings.hide()
        self._layout.addWidget(self.plan_warnings)
        self._build()
        self._layout.addStretch(1)

    # ---- construction --------------------------------------------------------------------------
    def _text(self, key: str, label: str, placeholder: str = "", help_text: str = "") -> Field:
        edit = QLineEdit()
        edit.setPlaceholderText(placeholder)
        edit.setClearButtonEnabled(True)
        edit.textEdited.connect(lambda text, k=key: self._emit(k, text))
        return self._field(key, label, edit, help_text)

    def _combo(
        self, key: str, label: str, items: list[str], placeholder: str = "", help_text: str = ""
    ) -> Field:
        combo = QComboBox()
        combo.setEditable(True)
        combo.addItems(items)
        line = combo.lineEdit()
        line.setPlaceholderText(placeholder)
        line.textEdited.connect(lambda text, k=key: self._emit(k, text))
        combo.activated.connect(lambda _i, k=key, c=combo: self._emit(k, c.currentText()))
        return self._field(key, label, combo, help_text)

    def _field(self, key: str, label: str, editor: QWidget, help_text: str = "") -> Field:
        field = Field(label, editor, help_text)
        field.setObjectName(f"field_{key}")
        editor.setObjectName(f"edit_{key}")
        self.fields[key] = field
        return field

    def _section(self, title: str, subtitle: str, columns: int = 2) -> Section:
        section = Section(title, subtitle, columns)
        self._layout.addWidget(section)
        return section

    def _build(self) -> None:
        s = self._section("General", "What this profile is called and how its server runs.")
        s.add(self._text("name", "Name", "e.g. Qwen3.6-27B INT4 MTP"))
        runtime = QComboBox()
        runtime.addItem("Docker container", "docker")
        runtime.addItem("Local process (vllm serve)", "process")
        runtime.activated.connect(lambda _i: self._emit("runtime", runtime.currentData()))
        s.add(self._field("runtime", "Runtime", runtime))
        notes = QPlainTextEdit()
        notes.setPlaceholderText("Where this configuration comes from, what it is for…")
        notes.setFixedHeight(84)
        notes.textChanged.connect(lambda: self._emit("notes", notes.toPlainText()))
        s.add(self._field("notes", "Notes", notes), span=2)

        s = self._section("Model and server", "The model vLLM serves and where clients reach it.")
        s.add(self._text("model", "Model", "Hugging Face id or path, e.g. Qwen/Qwen3-8B"), span=2)
        s.add(self._text("served_model_name", "Served model name", "defaults to the model"))
        s.add(self._text("host", "Host", HOST_PLACEHOLDERS["docker"]))
        s.add(self._text("port", "Port", "8000"))

        s = self._section("Container", "Docker image and container settings (Docker runtime).")
        self.container_section = s
        s.add(self._text("image", "Image", "vllm/vllm-openai:latest or repo@sha256:…"), span=2)
        s.add(
            self._text(
                "docker_host", "Docker host", "local socket", "ssh://user@box, tcp://host:2376 or a context"
            )
        )
        s.add(self._text("container_name", "Container name", "generated"))
        s.add(self._text("gpus", "GPUs", "none", "all, or indices such as 0,1"))
        s.add(self._text("shm_size", "Shared memory", "Docker default", "e.g. 16gb"))
        s.add(self._combo("ipc", "IPC mode", IPC_MODES, "Docker default"))
        s.add(self._text("power_limit_w", "Power limit (W per GPU)", "leave unchanged"))
        ports = ListEditor("8000:8000")
        ports.changed.connect(lambda v: self._emit("ports", v))
        s.add(self._field("ports", "Ports", ports, "host:container, e.g. 8020:8000"))
        bind = QComboBox()
        bind.addItem("Loopback only (127.0.0.1)", "loopback")
        bind.addItem("As written, every interface (like Docker Compose)", "file")
        bind.activated.connect(lambda _i: self._emit("ports_bind", bind.currentData()))
        s.add(
            self._field(
                "ports_bind",
                "Ports without an address",
                bind,
                "Loopback keeps a server without --api-key off the network",
            )
        )
        volumes = ListEditor("/host/path:/container/path")
        volumes.changed.connect(lambda v: self._emit("volumes", v))
        s.add(self._field("volumes", "Volumes", volumes, "host:container[:ro]"))

        s = self._section("Engine", "Memory, batching and precision. Empty fields use vLLM's defaults.", 3)
        s.add(self._text("max_model_len", "Max model length", "model default", "tokens, e.g. 32768 or 32k"))
        s.add(self._text("gpu_memory_utilization", "GPU memory utilization", "0.9", "a fraction, 0–1"))
        s.add(self._text("tensor_parallel_size", "Tensor parallel size", "1"))
        s.add(self._text("max_num_seqs", "Max sequences", "vLLM default"))
        s.add(self._text("max_num_batched_tokens", "Max batched tokens", "vLLM default"))
        s.add(self._combo("kv_cache_dtype", "KV cache dtype", KV_DTYPES, "auto"))
        s.add(self._combo("quantization", "Quantization", QUANTIZATIONS, "from the model"))
        s.add(self._combo("dtype", "Weights dtype", DTYPES, "auto"))
        eager = QCheckBox("Enforce eager (no CUDA graphs)")
        eager.toggled.connect(lambda on: self._emit("enforce_eager", True if on else None))
        s.add(self._field("enforce_eager", "Execution", eager))
        prefix = TriState()
        prefix.changed.connect(lambda v: self._emit("prefix_caching", v))
        s.add(self._field("prefix_caching", "Prefix caching", prefix))
        chunked = TriState()
        chunked.changed.connect(lambda v: self._emit("chunked_prefill", v))
        s.add(self._field("chunked_prefill", "Chunked prefill", chunked))
        self.memory = MemoryFitPanel()  # will it fit? live as the engine fields above change
        self._layout.addWidget(self.memory)

        s = self._section(
            "Sleep and idle",
            "vLLM sleep mode frees the GPU between uses (CUDA builds); idle: sleep or stop after N minutes.",
            3,
        )
        asleep = QCheckBox("Sleep mode (--enable-sleep-mode)")
        asleep.toggled.connect(lambda on: self._emit("sleep_mode", on))
        s.add(self._field("sleep_mode", "Sleep mode", asleep))
        s.add(self._text("idle_minutes", "Idle timeout (minutes)", "none", "no requests for this long"))
        s.add(self._combo("idle_action", "When idle", ["stop", "sleep"], "stop"))

        s = self._section("Speculative decoding", "Draft tokens per step; or write the full JSON config.", 3)
        s.add(self._combo("spec_method", "Method", SPEC_METHODS, "off"))
        s.add(self._text("spec_tokens", "Speculative tokens", "e.g. 3"))
        s.add(self._text("spec_json", "Config (JSON)", '{"method":"mtp","num_speculative_tokens":3}'))

        s = self._section(
            "Environment", "Variables set for the server. Secrets: store a reference like ${HF_TOKEN}.", 1
        )
        env = EnvTable()
        env.changed.connect(lambda v: self._emit("env", v))
        s.add(self._field("env", "Variables", env))

        s = self._section("Extra flags", "Other vLLM flags, one per line, kept in their order.", 1)
        extra = ListEditor("--flag value")
        extra.list.setMaximumHeight(200)
        extra.changed.connect(lambda v: self._emit("extra_flags", v))
        s.add(self._field("extra_flags", "Flags", extra))

    # ---- data ----------------------------------------------------------------------------------
    def _emit(self, key: str, value: Any) -> None:
        if not self._loading:
            self.fieldEdited.emit(key, value)

    def load(self, draft: Draft, *, skip: str | None = None) -> None:
        """Show the draft's values (the field ``skip`` is being typed in and keeps its text)."""
        self._loading = True
        try:
            for key, field in self.fields.items():
                if key == skip:
                    continue
                self._set_value(field.editor, draft.get(key))
            self._show_runtime(str(draft.get("runtime") or "docker"))
        finally:
            self._loading = False

    @staticmethod
    def _set_value(editor: QWidget, value: Any) -> None:
        if isinstance(editor, QLineEdit):
            if editor.text() != value:
                editor.setText(value)
                editor.setCursorPosition(0)  # a long value (the spec JSON) shows its start, not its middle
        elif isinstance(editor, TriState):
            editor.set_state(value)
        elif isinstance(editor, QComboBox):
            if editor.isEditable():
                editor.setEditText(value)
            else:
                editor.setCurrentIndex(max(0, editor.findData(value)))
        elif isinstance(editor, QCheckBox):
            editor.setChecked(bool(value))
        elif isinstance(editor, QPlainTextEdit):
            if editor.toPlainText() != value:
                editor.setPlainText(value)
        elif isinstance(editor, ListEditor):
            if editor.values() != value:
                editor.set_values(value)
        elif isinstance(editor, EnvTable) and editor.values() != value:
            editor.set_values(value)

    def _show_runtime(self, runtime: str) -> None:
        self.container_section.setVisible(runtime != "process")
        host = self.fields["host"].editor
        if isinstance(host, QLineEdit):
            host.setPlaceholderText(HOST_PLACEHOLDERS.get(runtime, HOST_PLACEHOLDERS["docker"]))

    def show_errors(self, errors: dict[str, str]) -> None:
        """Put each message under its field; one not tied to a field goes on top."""
        for key, field in self.fields.items():
            field.set_error(_tidy(errors.get(key)))
        general = errors.get("", "")
        self.general_error.setText(general)
        self.general_error.setVisible(bool(general))

    def show_plan_warnings(self, warnings: list[PlanWarning]) -> None:
        """The launch plan's warnings for the draft (hidden when there are none)."""
        self.plan_warnings.setText(warnings_text(warnings, prefix="At launch — "))
        self.plan_warnings.setStyleSheet(f"color: {theme.colors().amber};")
        self.plan_warnings.setVisible(bool(warnings))

    def editor(self, key: str) -> QWidget:
        """The editing widget of a field (tests and focus)."""
        return self.fields[key].editor


def _tidy(message: str | None) -> str | None:
    """``--max_model_len=abc 'abc': expected a whole number`` → ``Expected a whole number``."""
    if not message:
        return message
    if message.startswith("-") and ": " in message:
        message = message.split(": ", 1)[1]
    return message[:1].upper() + message[1:]
