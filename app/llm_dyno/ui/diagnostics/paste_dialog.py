"""The Diagnostics view's "Paste…": a launch log or a forum post pasted as text, bounded in size, read
as the CLI reads ``diagnose --post -`` (a post) or ``--log FILE`` (a log). Nothing pasted is stored."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from PySide6.QtCore import QMimeData, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.diagnose.post import MAX_POST_BYTES
from llm_dyno.core.runtime.logformats import line_level

MAX_PASTE_BYTES = 2 * 1024 * 1024  # a launch log pasted whole; a bigger one is read from its file
_MIB = 1024 * 1024


class PasteKind(Enum):
    """How pasted text is read."""

    GUESS = "guess"
    POST = "post"
    LOG = "log"


def guess_kind(text: str) -> PasteKind:
    """A launch log when most of its non-empty lines carry a log level ("INFO 05-03 18:41:34 [...]",
    "(EngineCore_DP0 pid=268) WARNING …"); a post otherwise (prose that quotes a few such lines)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return PasteKind.POST
    logged = sum(1 for line in lines if line_level(line) is not None)
    return PasteKind.LOG if logged * 2 >= len(lines) else PasteKind.POST


def bound_for(kind: PasteKind) -> int:
    """The most bytes read for that kind: a post as ``diagnose --post`` reads it, a log up to 2 MiB."""
    return MAX_POST_BYTES if kind is PasteKind.POST else MAX_PASTE_BYTES


def size_of(text: str) -> int:
    """The text's size in bytes as it is read (UTF-8)."""
    return len(text.encode("utf-8", errors="replace"))


@dataclass(frozen=True)
class Pasted:
    """Text pasted in the dialog and how it is read (a post or a launch log, never GUESS)."""

    kind: PasteKind
    text: str

    def describe(self) -> str:
        """``pasted post, 120 lines`` for the button and the sources."""
        n = len(self.text.splitlines())
        return f"pasted {'launch log' if self.kind is PasteKind.LOG else 'post'}, {n:,} line{'s' * (n != 1)}"


class BoundedText(QPlainTextEdit):
    """A plain text box that refuses a paste or drop that would take it over ``limit`` bytes (a huge
    clipboard would otherwise be laid out whole before anything could say no)."""

    refused = Signal(str)

    def __init__(self, limit: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.limit = limit

    def insertFromMimeData(self, source: QMimeData) -> None:
        """Insert the pasted text unless the box would then be over the limit (then say so)."""
        adding = size_of(source.text()) if source.hasText() else 0
        selected = size_of(self.textCursor().selectedText())
        total = size_of(self.toPlainText()) - selected + adding
        if total > self.limit:
            self.refused.emit(
                f"not pasted: {total / _MIB:.1f} MiB is over the {self.limit // _MIB} MiB a paste holds; "
                "choose a bigger launch log with “Choose log…” (any size is read)"
            )
            return
        super().insertFromMimeData(source)


class PasteDialog(QDialog):
    """Paste a launch log or a forum post; ``pasted()`` is what to read (None: forget the paste)."""

    def __init__(self, current: Pasted | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Paste a launch log or a post")
        self.resize(760, 520)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "Paste vLLM's launch log, or a forum post that quotes it and states its figures. A post's "
            "vLLM lines are read as a log and its figures as typed (the boxes in the view win), as "
            "<code>llm-dyno diagnose --post -</code> reads it; a launch log as <code>--log</code> reads "
            "one. Up to 2 MiB (a post: 1 MiB). Nothing pasted is saved: it is gone when the window closes."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        row = QHBoxLayout()
        row.addWidget(QLabel("Read it as"))
        self.kind_combo = QComboBox()
        self.kind_combo.addItem("a guess from the text", PasteKind.GUESS)
        self.kind_combo.addItem("a forum post", PasteKind.POST)
        self.kind_combo.addItem("a launch log", PasteKind.LOG)
        self.kind_combo.currentIndexChanged.connect(lambda _i: self._update())
        row.addWidget(self.kind_combo)
        row.addStretch(1)
        self.size_label = QLabel()
        self.size_label.setObjectName("sectionSubtitle")
        row.addWidget(self.size_label)
        layout.addLayout(row)
        self.text_box = BoundedText(MAX_PASTE_BYTES)
        self.text_box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text_box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text_box.setPlaceholderText(
            "(EngineCore_DP0 pid=268) INFO 05-03 18:41:34 [gpu_model_runner.py:2007] Model loading took "
            "16.87 GiB …\n\nor the post: “~43 narrative / ~54 code TPS at 330W … acceptance 93/87/74%”"
        )
        self.text_box.textChanged.connect(self._text_changed)
        self.text_box.refused.connect(self._refused)
        layout.addWidget(self.text_box, 1)
        self.note = QLabel()
        self.note.setObjectName("fieldHint")
        self.note.setWordWrap(True)
        layout.addWidget(self.note)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.read_button = self.buttons.addButton("Read", QDialogButtonBox.ButtonRole.AcceptRole)
        self.read_button.setObjectName("primaryButton")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._had_paste = current is not None
        self._refusal = ""
        if current is not None:
            self.kind_combo.setCurrentIndex(self.kind_combo.findData(current.kind))
            self.text_box.setPlainText(current.text)
        self._update()

    def kind(self) -> PasteKind:
        """How the text is read now: the choice, or the guess from the text."""
        chosen = self.kind_combo.currentData()
        return guess_kind(self.text()) if chosen is PasteKind.GUESS else chosen

    def text(self) -> str:
        """The text as pasted (toPlainText would turn a no-break space into a space)."""
        return self.text_box.document().toRawText().replace("\u2029", "\n")

    def pasted(self) -> Pasted | None:
        """What to read; None when the box is empty (the paste is forgotten)."""
        text = self.text()
        return Pasted(self.kind(), text) if text.strip() else None

    def _text_changed(self) -> None:
        self._refusal = ""  # a refused paste is said until the text changes
        self._update()

    def _refused(self, message: str) -> None:
        self._refusal = message
        self._update()

    def _update(self) -> None:
        text = self.text()
        size, kind = size_of(text), self.kind()
        limit = bound_for(kind)
        guessed = " (guessed)" if self.kind_combo.currentData() is PasteKind.GUESS and text.strip() else ""
        what = "a launch log" if kind is PasteKind.LOG else "a post"
        self.size_label.setText(f"{size / 1024:,.1f} KiB of {limit // _MIB} MiB · read as {what}{guessed}")
        over = size > limit
        if over:
            instead = (
                "read it as a launch log, or paste the post's own text"
                if kind is PasteKind.POST
                else "choose the log's file with “Choose log…” instead (any size is read)"
            )
            message = f"{size / _MIB:.2f} MiB is over the {limit // _MIB} MiB {what} is read up to; {instead}"
        elif self._refusal or text.strip():
            message = self._refusal
        else:
            message = "Empty: “Read” forgets the pasted text." if self._had_paste else ""
        self.note.setText(message)
        self.read_button.setEnabled(not over and (bool(text.strip()) or self._had_paste))
