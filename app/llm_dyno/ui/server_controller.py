"""Wires Launch / Stop / Plan to the server bridge, and server events to the list, dashboard and logs."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMessageBox,
    QPlainTextEdit,
    QStatusBar,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.ui.actions import Actions
from llm_dyno.ui.editor.editor_view import ProfileEditor
from llm_dyno.ui.servers import ServerBridge, lamp_for
from llm_dyno.ui.session import ProfileSession
from llm_dyno.ui.views.logs_view import LogsView
from llm_dyno.ui.views.server_view import ServerView
from llm_dyno.ui.widgets.profile_list import ProfileList


class ServerWindow(Protocol):
    """What the controller needs from the main window (public members only)."""

    session: ProfileSession
    editor: ProfileEditor
    profile_list: ProfileList
    server_view: ServerView
    logs_view: LogsView
    actions_: Actions
    interactive: bool

    def statusBar(self) -> QStatusBar: ...
    def confirm_discard(self) -> bool: ...
    def show_error(self, message: str) -> None: ...
    def show_view(self, key: str) -> None: ...


class PlanDialog(QDialog):
    """The dry run: what would run for a profile."""

    def __init__(self, name: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Launch plan — {name}")
        self.resize(760, 480)
        layout = QVBoxLayout(self)
        view = QPlainTextEdit(text)
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout.addWidget(view)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


class ServerController(QObject):
    """Reacts to the toolbar and to server events; holds no state the bridge does not already have."""

    def __init__(self, window: ServerWindow, bridge: ServerBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.w = window
        self.bridge = bridge
        self.last_plan: tuple[str, str] | None = None  # (profile, text), for tests and non-interactive use
        self._stop_wanted: set[str] = set()
        a = window.actions_
        a.launch.triggered.connect(self.launch_selected)
        a.stop.triggered.connect(self.stop_selected)
        a.plan.triggered.connect(self.plan_selected)
        window.server_view.launchRequested.connect(self.launch_selected)
        bridge.statusChanged.connect(self._status_changed)
        bridge.logLines.connect(window.logs_view.append)
        bridge.logLines.connect(window.server_view.feed_log_lines)  # warnings → dashboard event markers
        bridge.launchStarted.connect(self._launch_started)
        bridge.launchFailed.connect(self._launch_failed)
        bridge.stopFinished.connect(self._stop_finished)
        bridge.stopFailed.connect(lambda _n, msg: window.show_error(msg))
        bridge.planReady.connect(self._plan_ready)
        bridge.planFailed.connect(lambda _n, msg: window.show_error(msg))
        bridge.runningRequests.connect(self._running_requests)
        bridge.busyChanged.connect(lambda _name: self.update_actions())

    # ---- selection -----------------------------------------------------------------------------
    @property
    def selected(self) -> str | None:
        """The profile selected in the window."""
        return self.w.editor.profile_name

    def refresh(self) -> None:
        """The selection changed (or a server did): update the views and the actions."""
        name = self.selected
        self.w.logs_view.show_profile(name)
        status = self.bridge.status(name) if name else None
        handle = self.bridge.handle(name) if name else None
        if status is None or handle is None:
            self.w.server_view.show_idle(name, can_launch=name is not None)
        else:
            plan = handle.plan
            # port 0: Docker picks the host port, and the plan names it once the container runs
            url = plan.base_url if plan.host_port else "host port: chosen by Docker at launch"
            self.w.server_view.set_status(name or "", status, url, plan.runtime, plan)
        self.update_actions()

    def update_actions(self) -> None:
        """Launch when the selected profile is not running, Stop when it is."""
        name = self.selected
        live = name is not None and self.bridge.is_live(name)
        busy = name is not None and self.bridge.is_busy(name)
        a = self.w.actions_
        a.launch.setEnabled(name is not None and not live and not busy)
        a.stop.setEnabled(live and name not in self._stop_wanted)
        a.plan.setEnabled(name is not None)

    # ---- commands ------------------------------------------------------------------------------
    def launch_selected(self) -> None:
        """Launch the selected profile (as saved; unsaved changes are asked about first)."""
        name = self.selected
        if name is None or self.bridge.is_live(name) or not self.w.confirm_discard():
            return
        profile = self.w.session.get(name)
        if profile is None:
            return
        self.w.logs_view.reset(name)
        self.w.profile_list.set_lamp(name, "loading")
        self.w.server_view.start(name, "", profile.runtime.value)
        self.w.show_view("dashboard")
        self.w.statusBar().showMessage(f"Launching “{name}”…")
        self.bridge.launch(profile)
        self.update_actions()

    def stop_selected(self) -> None:
        """Stop the selected profile's server, asking first when it is serving requests."""
        name = self.selected
        if name is None or not self.bridge.is_live(name):
            return
        self._stop_wanted.add(name)
        self.update_actions()
        self.bridge.check_running_requests(name)

    def plan_selected(self) -> None:
        """Show what would run for the selected profile."""
        profile = self.w.session.get(self.selected or "")
        if profile is not None:
            self.bridge.plan(profile)

    # ---- bridge events -------------------------------------------------------------------------
    def confirm_stop(self, name: str, running: int | None) -> bool:
        """Ask before stopping a server that is serving requests."""
        if not running or not self.w.interactive:
            return True
        answer = QMessageBox.question(
            self.w if isinstance(self.w, QWidget) else None,
            "Stop the server?",
            f"“{name}” is serving {running} request{'s' if running != 1 else ''} right now. Stop it anyway?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def _running_requests(self, name: str, running: object) -> None:
        if name not in self._stop_wanted:
            return
        if not self.confirm_stop(name, running if isinstance(running, int) else None):
            self._stop_wanted.discard(name)
            self.update_actions()
            return
        self.w.statusBar().showMessage(f"Stopping “{name}”…")
        self.bridge.stop(name)

    def _status_changed(self, name: str, status: ServerStatus) -> None:
        self.w.profile_list.set_lamp(name, lamp_for(status.state))
        if name == self.selected:
            handle = self.bridge.handle(name)
            url, runtime = (handle.plan.base_url, handle.plan.runtime) if handle else ("", None)
            self.w.server_view.set_status(name, status, url, runtime, handle.plan if handle else None)
        if status.state is ServerState.READY:
            handle = self.bridge.handle(name)
            where = f" at {handle.plan.base_url}" if handle else ""
            self.w.statusBar().showMessage(f"“{name}” is ready{where}", 10000)
        elif status.state is ServerState.FAILED:
            summary = status.failure.summary if status.failure else "failed"
            self.w.statusBar().showMessage(f"“{name}” failed: {summary}", 15000)
        elif status.state is ServerState.STOPPED and name not in self._stop_wanted:
            # stopped from elsewhere (llm-dyno stop, another window): say so, it was no crash
            self.w.statusBar().showMessage(f"“{name}” {status.detail or 'stopped'}", 10000)
        if not status.state.is_live:
            self._stop_wanted.discard(name)
        self.update_actions()

    def _launch_started(self, name: str) -> None:
        self.w.statusBar().showMessage(f"“{name}” is starting…", 5000)
        if name == self.selected:
            self.refresh()
        else:
            self.update_actions()

    def _launch_failed(self, name: str, message: str) -> None:
        status = self.bridge.status(name)  # refused because it already runs: it still does
        self.w.profile_list.set_lamp(name, lamp_for(status.state if status is not None else None))
        if name == self.selected and (status is None or not status.state.is_live):
            self.w.server_view.show_idle(name)
        self.update_actions()
        # replaces "… is starting…", which would otherwise stay up for its 5 s
        self.w.statusBar().showMessage(f"“{name}” did not start: {message.splitlines()[0]}", 15000)
        self.w.show_error(message)

    def _stop_finished(self, name: str) -> None:
        self._stop_wanted.discard(name)
        self.w.statusBar().showMessage(f"Stopped “{name}”", 5000)
        self.update_actions()

    def _plan_ready(self, name: str, text: str) -> None:
        self.last_plan = (name, text)
        if self.w.interactive:
            PlanDialog(name, text, self.w if isinstance(self.w, QWidget) else None).exec()

    # ---- quitting ------------------------------------------------------------------------------
    def confirm_quit(self) -> bool:
        """Ask what to do with running servers when the window closes; False to stay open."""
        live = self.bridge.live_names()
        if not live or not self.w.interactive:
            return True
        box = QMessageBox(self.w if isinstance(self.w, QWidget) else None)
        box.setWindowTitle("Servers are running")
        box.setText(f"{len(live)} server{'s are' if len(live) != 1 else ' is'} running: {', '.join(live)}.")
        box.setInformativeText("Leave them running (LLM Dyno finds them again next time) or stop them?")
        leave = box.addButton("Leave running", QMessageBox.ButtonRole.AcceptRole)
        stop = box.addButton("Stop and quit", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        if box.clickedButton() is stop:
            self.bridge.stop_all()
            return True
        return box.clickedButton() is leave
