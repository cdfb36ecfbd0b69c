"""The Diagnostics view's "Read" row: what ``diagnose`` reads beyond the profile, one button per input of
the CLI (``--log`` or a pasted log, ``--post`` or a pasted post, ``--bench``, ``--url`` with
``--api-key-env``, ``--reference-log``). Pasted text is held in memory only."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QWidget

from llm_dyno.core.diagnose.post import Post, read_post, read_post_file
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.ui.diagnostics.paste_dialog import Pasted, PasteDialog, PasteKind, bound_for, size_of
from llm_dyno.ui.diagnostics.server_dialog import ServerChoice, ServerDialog
from llm_dyno.ui.messages import window_message

PASTED_SOURCE = "pasted"  # a pasted post's name in the sources ("post pasted (120 lines)")
PASTED_LOG_NAME = "pasted-log.txt"  # a pasted launch log's name there ("log pasted-log.txt (…)")
_PASTE_TIP = "paste a launch log or a forum post (nothing pasted is saved)"


def _label(button: QPushButton, text: str) -> None:
    """A button names what it reads, elided in the middle: a long name must not widen the view."""
    button.setText(button.fontMetrics().elidedText(text, Qt.TextElideMode.ElideMiddle, 220))


@dataclass(frozen=True)
class ReadChoice:
    """What one diagnosis reads, taken when it starts (the worker never sees the widgets)."""

    log_path: Path | None
    pasted_log: str | None
    reference_log_path: Path | None
    post: Post | None
    bench_path: Path | None
    server: ServerChoice | None

    def endpoint(self) -> Endpoint | None:
        """The server given by URL, as ``--url`` / ``--api-key-env`` make it (None: the profile's own)."""
        return self.server.endpoint() if self.server is not None else None

    @contextmanager
    def log(self) -> Iterator[Path | None]:
        """The log to read: the chosen file, or a pasted log in a private file (0600, in a folder of
        its own) that is removed when the diagnosis has read it; None: the profile's latest."""
        if self.pasted_log is None:
            yield self.log_path
            return
        with tempfile.TemporaryDirectory(prefix="llm-dyno-paste-") as folder:
            path = Path(folder) / PASTED_LOG_NAME
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.pasted_log)
            yield path


class ReadInputs(QWidget):
    """The Read row; ``changed`` when an input was chosen, pasted or forgotten."""

    changed = Signal()
    errorMessage = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.log_path: Path | None = None
        self.reference_log_path: Path | None = None
        self.post: Post | None = None  # a forum post, from a file or pasted
        self.pasted: Pasted | None = None  # held in memory only: a paste may carry keys or hosts
        self.bench_path: Path | None = None  # a result written by bench --json (None: the latest)
        self.server: ServerChoice | None = None  # --url: read instead of the profile's own server
        self.paste_dialog: PasteDialog | None = None  # the last one opened
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Read"))

        def button(text: str, tip: str, slot: Callable[[], object]) -> QPushButton:
            b = QPushButton(text)
            b.setToolTip(tip)
            b.clicked.connect(slot)
            row.addWidget(b)
            return b

        self.log_button = button(
            "Choose log…",
            "the server's launch log (default: the profile's latest), as --log",
            self._choose_log,
        )
        self.paste_button = button("Paste…", _PASTE_TIP, self.open_paste_dialog)
        self.post_button = button(
            "Post…",
            "a forum post saved as text: its vLLM lines are read as a log, its figures as typed "
            "(the boxes below win)",
            self._choose_post,
        )
        self.bench_button = button(
            "Benchmark…",
            "a result written by `llm-dyno bench --json FILE`, instead of the profile's latest (--bench)",
            self._choose_bench,
        )
        self.server_button = button(
            "Server…",
            "a running server by URL, and the variable holding its key (--url, --api-key-env); "
            "default: the selected profile's own server when it runs",
            self.open_server_dialog,
        )
        self.reference_log_button = button(
            "Reference log…", "the reference's boot log, for the boot-log facts side by side",
            self._choose_reference_log,
        )  # fmt: skip
        row.addStretch(1)

    def choice(self) -> ReadChoice:
        """What the next diagnosis reads."""
        pasted_log = (
            self.pasted.text if self.pasted is not None and self.pasted.kind is PasteKind.LOG else None
        )
        return ReadChoice(
            self.log_path, pasted_log, self.reference_log_path, self.post, self.bench_path, self.server
        )

    def profile_changed(self) -> None:
        """Another profile: its latest log is read (a chosen or pasted log was the last one's)."""
        self.log_path = None
        if self.pasted is not None and self.pasted.kind is PasteKind.LOG:
            self._set_paste_state(None)

    # ---- files ---------------------------------------------------------------------------------
    def set_log(self, path: Path | None) -> None:
        """Read this log instead of the profile's latest (a pasted launch log is forgotten)."""
        self.log_path = path
        if path is not None and self.pasted is not None and self.pasted.kind is PasteKind.LOG:
            self._set_paste_state(None)
        self.changed.emit()

    def _choose_log(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Server log", "", "Logs (*.log *.txt);;All files (*)")
        if name:
            self.set_log(Path(name))

    def set_reference_log(self, path: Path | None) -> None:
        """Read the reference's boot log from this file (None: the reference's stated facts only)."""
        self.reference_log_path = path
        self.changed.emit()

    def _choose_reference_log(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, "The reference's boot log", "", "Logs (*.log *.txt);;All files (*)"
        )
        if name:
            self.set_reference_log(Path(name))

    def set_post(self, path: Path | None) -> None:
        """Read a forum post from this file (None: no post); a post that cannot be read says why."""
        try:
            self.post = read_post_file(path) if path is not None else None
        except DynoError as exc:
            self.post = None
            self.errorMessage.emit(exc.message)
        if self.pasted is not None and self.pasted.kind is PasteKind.POST:
            self.pasted = None  # the file's post replaces the pasted one
            self._set_paste_state(None)
        _label(self.post_button, f"Post: {self.post.source}" if self.post is not None else "Post…")
        self.changed.emit()

    def _choose_post(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "A forum post", "", "Text (*.txt *.md);;All files (*)")
        if name:
            self.set_post(Path(name))

    def set_bench(self, path: Path | None) -> None:
        """Read this benchmark result (``bench --json FILE``) instead of the profile's latest."""
        self.bench_path = path
        _label(self.bench_button, f"Benchmark: {path.name}" if path is not None else "Benchmark…")
        self.changed.emit()

    def _choose_bench(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, "A benchmark result (bench --json)", "", "Results (*.json);;All files (*)"
        )
        if name:
            self.set_bench(Path(name))

    # ---- pasted text ---------------------------------------------------------------------------
    def open_paste_dialog(self) -> PasteDialog:
        """The Paste… dialog (window-modal, not blocking); what it reads is read when it is accepted."""
        dialog = PasteDialog(self.pasted, self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.accepted.connect(lambda: self.set_pasted(dialog.pasted()))
        dialog.finished.connect(dialog.deleteLater)
        self.paste_dialog = dialog
        dialog.open()
        return dialog

    def set_pasted(self, pasted: Pasted | None) -> None:
        """Read pasted text: a post as ``diagnose --post -`` reads standard input, a launch log as
        ``--log`` reads a file; None forgets the paste. Too big or unreadable: says why, keeps the last."""
        if pasted is not None:
            limit = bound_for(pasted.kind)
            if size_of(pasted.text) > limit:
                self.errorMessage.emit(
                    f"the pasted text is {size_of(pasted.text):,} bytes; a paste is read up to {limit:,} "
                    "bytes: choose the log's file with “Choose log…” (any size is read)"
                )
                return
            if pasted.kind is PasteKind.POST:
                try:
                    post = read_post(pasted.text, PASTED_SOURCE)  # as the CLI reads --post -
                except DynoError as exc:
                    self.errorMessage.emit(exc.message)
                    return
                self.post = post
                self.post_button.setText("Post…")  # the paste replaces a post read from a file
            else:
                self.log_path = None  # the pasted log replaces a chosen one
        self._set_paste_state(pasted)
        self.changed.emit()

    def _set_paste_state(self, pasted: Pasted | None) -> None:
        was_post = self.pasted is not None and self.pasted.kind is PasteKind.POST
        if was_post and (pasted is None or pasted.kind is PasteKind.LOG):
            self.post = None  # the pasted post is forgotten with the paste
        self.pasted = pasted
        self.paste_button.setText(f"Pasted: {pasted.describe()[7:]}" if pasted is not None else "Paste…")
        self.paste_button.setToolTip(
            f"{pasted.describe()}, held in memory only; click to change or forget it"
            if pasted is not None
            else _PASTE_TIP
        )

    # ---- a server by URL -----------------------------------------------------------------------
    def open_server_dialog(self) -> ServerDialog:
        """The Server… dialog (window-modal, not blocking); its server is read when it is accepted."""
        dialog = ServerDialog(self.server, self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.accepted.connect(lambda: self.set_server(dialog.choice()))
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
        return dialog

    def set_server(self, server: ServerChoice | None) -> None:
        """Read this server (``--url``, ``--api-key-env``) instead of the profile's own (None: the
        profile's own when it runs); one that cannot be read says why and is not taken."""
        try:
            if server is not None:
                server.endpoint()
        except DynoError as exc:
            self.errorMessage.emit(window_message(exc))
            return
        self.server = server
        _label(self.server_button, f"Server: {server.url}" if server is not None else "Server…")
        self.changed.emit()
