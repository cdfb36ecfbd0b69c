"""The tray icon (one entry per running server, with its state) and the desktop glue of the window.

:class:`ServerTray` follows the server bridge: each live server is listed with its state and a
"Stop" entry; a click on the icon brings the window to the front; ready and crashed servers raise a
desktop notification. :func:`install_desktop` adds the tray, notifications, the Settings and
"Check system…" menu entries, and the remembered window layout to a main window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow, QMenu, QSystemTrayIcon, QWidget

from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.ui import notify
from llm_dyno.ui.icons import app_icon
from llm_dyno.ui.servers import ServerBridge

APP_TITLE = "LLM Dyno"


def state_label(state: ServerState) -> str:
    """A server state in words: ``loading weights``, ``ready``…"""
    return state.value.replace("_", " ")


class ServerTray(QObject):
    """The tray icon and its menu, rebuilt whenever a server's state changes."""

    def __init__(
        self,
        window: QWidget,
        bridge: ServerBridge,
        quit_app: Callable[[], None] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.window = window
        self.bridge = bridge
        self._quit = quit_app or self._default_quit
        self.states: dict[str, ServerState] = {}
        self.icon = QSystemTrayIcon(app_icon(), self)
        self.icon.setToolTip(APP_TITLE)
        self.menu = QMenu()
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self.icon.messageClicked.connect(self.show_window)
        bridge.statusChanged.connect(self.on_status)
        bridge.stopFinished.connect(lambda name: self.on_status(name, None))
        self.rebuild()

    # ---- state ---------------------------------------------------------------------------------
    def on_status(self, name: str, status: ServerStatus | None) -> None:
        """A server changed state: update the menu, and notify on ready / failed."""
        before = self.states.get(name)
        state = status.state if status is not None else ServerState.STOPPED
        if state is before:
            return
        if state.is_live:
            self.states[name] = state
        else:
            self.states.pop(name, None)
        if state is ServerState.READY:
            handle = self.bridge.handle(name)
            where = f" at {handle.plan.base_url}" if handle is not None else ""
            notify.notify(f"“{name}” is ready", f"Serving{where}", notify.Kind.SUCCESS)
        elif state is ServerState.FAILED and before is not None:
            summary = status.failure.summary if status is not None and status.failure else "it stopped"
            notify.notify(f"“{name}” crashed", summary, notify.Kind.ERROR)
        self.rebuild()

    def entries(self) -> list[str]:
        """The menu's entries as text (separators as ``---``), for tests and accessibility."""
        return [("---" if a.isSeparator() else a.text()) for a in self.menu.actions()]

    def rebuild(self) -> None:
        """Make the menu from the current states."""
        self.menu.clear()
        show = self.menu.addAction("Show LLM Dyno")
        show.triggered.connect(self.show_window)
        self.menu.addSeparator()
        if not self.states:
            self.menu.addAction("No servers running").setEnabled(False)
        for name, state in sorted(self.states.items()):
            label = self.menu.addAction(f"{name} — {state_label(state)}")
            label.setEnabled(False)
            stop = self.menu.addAction(f"Stop {name}")
            stop.setEnabled(state is not ServerState.STOPPING)
            stop.triggered.connect(lambda _c=False, n=name: self.bridge.stop(n))
        self.menu.addSeparator()
        quit_ = self.menu.addAction("Quit")
        quit_.triggered.connect(self._quit)
        running = len(self.states)
        ready = sum(1 for s in self.states.values() if s is ServerState.READY)
        self.icon.setToolTip(f"{APP_TITLE} — {running} running, {ready} ready" if running else APP_TITLE)

    # ---- actions -------------------------------------------------------------------------------
    def show_window(self) -> None:
        """Bring the main window to the front (restoring it when minimised)."""
        w = self.window
        if w.isMinimized():
            w.showNormal()
        w.show()
        w.raise_()
        w.activateWindow()

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.show_window()

    def _default_quit(self) -> None:
        if self.window.close():  # the window asks about unsaved changes and running servers
            app = QApplication.instance()
            if app is not None:
                app.quit()

    def show(self) -> bool:
        """Show the icon when the desktop has a tray; False when it has none."""
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return False
        self.icon.show()
        return True


@dataclass
class Desktop:
    """What :func:`install_desktop` added to a window (kept alive by the caller)."""

    tray: ServerTray
    notifier: notify.Notifier
    settings_action: QAction
    doctor_action: QAction


def install_desktop(window: QMainWindow, bridge: ServerBridge, *, with_tray: bool = True) -> Desktop:
    """Add the tray, notifications, Settings / Check system entries and the remembered layout."""
    from llm_dyno.ui.dialogs.doctor_dialog import DoctorDialog
    from llm_dyno.ui.dialogs.settings_dialog import SettingsDialog, remember_layout

    tray = ServerTray(window, bridge, parent=window)
    if with_tray:
        tray.show()
    notifier = notify.Notifier(tray.icon, window.statusBar())
    notify.install(notifier)

    settings_action = QAction("Settings…", window)
    settings_action.setShortcut(QKeySequence("Ctrl+,"))
    settings_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    settings_action.setToolTip("Theme, default Docker host, sampling interval, data folder (Ctrl+,)")
    settings_action.triggered.connect(lambda: SettingsDialog(window).exec())
    doctor_action = QAction("Check system…", window)
    doctor_action.setShortcut(QKeySequence("Ctrl+Shift+K"))
    doctor_action.setToolTip("Check Docker, the NVIDIA runtime, GPUs and vLLM (Ctrl+Shift+K)")
    doctor_action.triggered.connect(lambda: DoctorDialog(window).exec())
    quit_action = QAction("Quit", window)
    quit_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Quit))
    quit_action.setToolTip("Quit LLM Dyno")
    quit_action.triggered.connect(tray._default_quit)

    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    file_menu.addAction(settings_action)
    file_menu.addSeparator()
    file_menu.addAction(quit_action)
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(doctor_action)
    shortcuts = getattr(getattr(window, "actions_", None), "shortcuts", None)
    if isinstance(shortcuts, QAction):
        help_menu.addAction(shortcuts)
    for action in (settings_action, doctor_action, quit_action):
        window.addAction(action)
    extra = getattr(getattr(window, "actions_", None), "extra", None)
    if isinstance(extra, list):  # listed in the F1 overlay
        extra.extend([settings_action, doctor_action, quit_action])
    remember_layout(window)
    return Desktop(tray, notifier, settings_action, doctor_action)
