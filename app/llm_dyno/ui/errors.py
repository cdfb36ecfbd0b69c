"""One funnel for unexpected errors: ``sys.excepthook`` and ``threading.excepthook`` into a dialog.

The app never closes silently on a bug: the user sees what happened and can copy the details.
Errors raised in other threads are handed to the GUI thread through a queued signal.
"""

from __future__ import annotations

import sys
import threading
import traceback
from types import TracebackType

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.errors import DynoError
from llm_dyno.ui.messages import window_message


def versions_report(vllm_version: str | None = None) -> str:
    """App, Python, Qt and vLLM versions and the platform, for a bug report."""
    import platform
    from importlib import metadata

    import PySide6
    from PySide6.QtCore import qVersion

    from llm_dyno import __version__

    if vllm_version is None:
        try:
            vllm_version = metadata.version("vllm")
        except metadata.PackageNotFoundError:
            vllm_version = "unknown (not installed here; the server's own is in its log)"
    return "\n".join(
        [
            f"LLM Dyno {__version__}",
            f"Python {platform.python_version()} ({sys.executable})",
            f"Qt {qVersion()}, PySide6 {PySide6.__version__}",
            f"vLLM {vllm_version}",
            f"Platform {platform.platform()}",
        ]
    )


class ErrorDialog(QDialog):
    """A message the user can act on, and the full details to copy into a bug report."""

    def __init__(self, message: str, details: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Something went wrong")
        self.setMinimumSize(560, 360)
        layout = QVBoxLayout(self)
        title = QLabel("LLM Dyno hit an unexpected error")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        self.message = QLabel(message)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message)
        hint = QLabel("The app keeps running. Details for a bug report:")
        hint.setObjectName("sectionSubtitle")
        layout.addWidget(hint)
        self.details = QPlainTextEdit(details)
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        layout.addWidget(self.details, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy = buttons.addButton("Copy details", QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(self._copy)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(f"{self.message.text()}\n\n{self.details.toPlainText()}")


class ErrorFunnel(QObject):
    """Routes uncaught exceptions from any thread to one dialog on the GUI thread."""

    errorRaised = Signal(str, str)  # message, details

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.errorRaised.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self.dialog_parent: QWidget | None = None
        self.suppress_dialogs = False  # tests and screenshot mode print instead
        self.last: tuple[str, str] | None = None
        self.vllm_version: str | None = None  # set when a server reported it (GET /version)
        self._previous_hook = sys.excepthook
        self._previous_thread_hook = threading.excepthook

    def install(self) -> None:
        """Become the process's exception hook (main thread and other threads)."""
        sys.excepthook = self._hook
        threading.excepthook = self._thread_hook

    def uninstall(self) -> None:
        """Restore the hooks that were there before."""
        sys.excepthook = self._previous_hook
        threading.excepthook = self._previous_thread_hook

    def report(self, exc: BaseException) -> None:
        """Show an exception caught by the caller (same dialog as uncaught ones)."""
        self._hook(type(exc), exc, exc.__traceback__)

    def _hook(self, etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(etype, KeyboardInterrupt):
            self._previous_hook(etype, value, tb)
            return
        message = window_message(value) if isinstance(value, DynoError) else f"{etype.__name__}: {value}"
        details = (
            versions_report(self.vllm_version)
            + "\n\n"
            + "".join(traceback.format_exception(etype, value, tb))
        )
        print(details, file=sys.stderr)
        self.errorRaised.emit(message, details)

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None:
            return
        self._hook(args.exc_type, args.exc_value, args.exc_traceback)

    @Slot(str, str)
    def _show(self, message: str, details: str) -> None:
        self.last = (message, details)
        if self.suppress_dialogs:
            return
        ErrorDialog(message, details, self.dialog_parent).exec()
