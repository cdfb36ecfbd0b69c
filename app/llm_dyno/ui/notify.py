"""Desktop notifications: ``notify(title, text, kind)`` from anywhere in the GUI.

Messages go to the tray icon's balloon (the desktop's notification service) when a tray is shown, and
to the main window's status bar otherwise. Call it on the GUI thread (a worker emits a signal first).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from PySide6.QtWidgets import QStatusBar, QSystemTrayIcon


class Kind(StrEnum):
    """What a notification is about; picks the icon."""

    INFO = "info"
    SUCCESS = "success"
    WARNING = "warning"
    ERROR = "error"


_ICONS = {
    Kind.INFO: QSystemTrayIcon.MessageIcon.Information,
    Kind.SUCCESS: QSystemTrayIcon.MessageIcon.Information,
    Kind.WARNING: QSystemTrayIcon.MessageIcon.Warning,
    Kind.ERROR: QSystemTrayIcon.MessageIcon.Critical,
}
TRAY_MS = 8000
STATUS_MS = 10000


@dataclass(frozen=True)
class Sent:
    """A notification that was shown, and where (``tray`` or ``status``; ``none`` when nowhere)."""

    title: str
    text: str
    kind: Kind
    channel: str


class Notifier:
    """Shows notifications on the tray when it is visible, else in a status bar."""

    def __init__(self, tray: QSystemTrayIcon | None = None, status_bar: QStatusBar | None = None) -> None:
        self.tray = tray
        self.status_bar = status_bar
        self.sent: list[Sent] = []  # the latest ones, for tests and a future history

    def tray_usable(self) -> bool:
        """Whether balloon messages will reach the user."""
        return (
            self.tray is not None
            and self.tray.isVisible()
            and QSystemTrayIcon.isSystemTrayAvailable()
            and QSystemTrayIcon.supportsMessages()
        )

    def notify(self, title: str, text: str, kind: Kind | str = Kind.INFO) -> Sent:
        """Show a notification; returns what was sent and where."""
        kind = Kind(kind)
        if self.tray is not None and self.tray_usable():
            self.tray.showMessage(title, text, _ICONS[kind], TRAY_MS)
            channel = "tray"
        elif self.status_bar is not None:
            self.status_bar.showMessage(f"{title} — {text}", STATUS_MS)
            channel = "status"
        else:
            channel = "none"
        sent = Sent(title, text, kind, channel)
        self.sent = [*self.sent[-49:], sent]
        return sent


_notifier: Notifier | None = None


def install(notifier: Notifier | None) -> None:
    """Make ``notifier`` the one :func:`notify` uses (None: notifications are dropped)."""
    global _notifier
    _notifier = notifier


def current() -> Notifier | None:
    """The installed notifier."""
    return _notifier


def notify(title: str, text: str, kind: Kind | str = Kind.INFO) -> Sent | None:
    """Tell the user something finished or broke (server ready / crashed, benchmark done)."""
    return _notifier.notify(title, text, kind) if _notifier is not None else None
