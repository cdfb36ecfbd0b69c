"""The main window: profile sidebar, the view switcher, toolbar and status bar, wired to the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QSystemTrayIcon,
    QTabBar,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerState
from llm_dyno.ui.actions import VIEWS, make_actions
from llm_dyno.ui.deferred_views import DeferredView, DeferredViews
from llm_dyno.ui.dialogs.attach_dialog import attach_action
from llm_dyno.ui.editor.editor_view import ProfileEditor
from llm_dyno.ui.icons import ICON_SIZE, icon
from llm_dyno.ui.jobs_manager import JobsManager
from llm_dyno.ui.profile_commands import ProfileCommands
from llm_dyno.ui.profile_watcher import ProfileFolderWatcher
from llm_dyno.ui.server_controller import ServerController
from llm_dyno.ui.servers import ServerBridge
from llm_dyno.ui.session import ProfileSession
from llm_dyno.ui.views.logs_view import LogsView
from llm_dyno.ui.views.server_view import ServerView
from llm_dyno.ui.widgets.banner import WarningBanner
from llm_dyno.ui.widgets.profile_list import ProfileList

if TYPE_CHECKING:
    from llm_dyno.ui.bench.bench_view import BenchmarkView
    from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
    from llm_dyno.ui.tune.tune_view import TuneView
    from llm_dyno.ui.views.diff_view import DiffView
    from llm_dyno.ui.views.servers_overview import ServersOverview

APP_TITLE = "LLM Dyno"


class MainWindow(ProfileCommands, QMainWindow):
    """One window: profiles on the left, views on the right."""

    # built when their tab is first shown (or on first access): see deferred_views
    diff_view = DeferredView["DiffView"]("diff")
    bench_view = DeferredView["BenchmarkView"]("benchmark")
    diagnostics_view = DeferredView["DiagnosticsView"]("diagnostics")
    servers_view = DeferredView["ServersOverview"]("servers")
    tune_view = DeferredView["TuneView"]("tune")

    def __init__(
        self,
        session: ProfileSession | None = None,
        bridge: ServerBridge | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.session = session or ProfileSession(parent=self)
        self.bridge = bridge or ServerBridge(parent=self)
        # the servers outlive the window, its bridge does not: no server's event reaches a closed window
        self.destroyed.connect(self.bridge.shutdown)
        self.jobs = JobsManager(self)  # the long jobs of every view: one at a time per server or GPU
        self.setWindowTitle(APP_TITLE)
        self.resize(1280, 800)
        self.setMinimumSize(900, 560)
        self.actions_ = make_actions(self)
        self.interactive = True  # False in tests / screenshot mode: no modal questions
        self._build_toolbar()

        self.profile_list = ProfileList()
        self.profile_list.setMinimumWidth(240)
        self.editor = ProfileEditor()
        self.server_view = ServerView()
        self.logs_view = LogsView()  # built now: it keeps every server's log lines from the start
        self.views = DeferredViews()
        self.views.add("profile", self.editor)
        self.views.defer("diff", self._build_diff_view)
        self.views.add("dashboard", self.server_view)
        self.views.add("logs", self.logs_view)
        self.views.defer("benchmark", self._build_bench_view)
        self.views.defer("diagnostics", self._build_diagnostics_view)
        self.views.defer("servers", self._build_servers_view)
        self.views.defer("tune", self._build_tune_view)

        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        rcol.setSpacing(0)
        header = QWidget()
        header.setObjectName("viewHeader")
        header.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        hcol = QVBoxLayout(header)
        hcol.setContentsMargins(12, 0, 12, 0)
        self.view_tabs = QTabBar()
        self.view_tabs.setObjectName("viewTabs")
        self.view_tabs.setDrawBase(False)
        self.view_tabs.setExpanding(False)
        self.view_tabs.setIconSize(QSize(16, 16))
        for key, label, icon_name in VIEWS:
            self.view_tabs.addTab(icon(icon_name), label)
            self.view_tabs.setTabData(self.view_tabs.count() - 1, key)
        hcol.addWidget(self.view_tabs)
        rcol.addWidget(header)
        self.banner = WarningBanner()
        banner_box = QWidget()
        bl = QVBoxLayout(banner_box)
        bl.setContentsMargins(12, 10, 12, 0)
        bl.addWidget(self.banner)
        self._banner_box = banner_box
        rcol.addWidget(banner_box)
        self.stack = QStackedWidget()
        for key in self.views:
            self.stack.addWidget(self.views.page(key))
        rcol.addWidget(self.stack, 1)
        self.view_tabs.currentChanged.connect(lambda i: self.stack.setCurrentIndex(i))

        split = self.split = QSplitter(Qt.Orientation.Horizontal)
        split.setHandleWidth(1)
        split.addWidget(self.profile_list)
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([300, 980])
        split.setChildrenCollapsible(False)
        self.setCentralWidget(split)
        # the sidebar keeps its width (300, or where the user drags it) whichever view is shown: a view's
        # layout settling after its first show must not take it
        self._sidebar_w = 300
        split.splitterMoved.connect(lambda _pos, _i: setattr(self, "_sidebar_w", split.sizes()[0]))
        self.view_tabs.currentChanged.connect(lambda _i: QTimer.singleShot(0, self._keep_sidebar))

        self._build_status_bar()
        self._connect()
        self.servers = ServerController(self, self.bridge, self)
        self.bridge.statusChanged.connect(lambda _n, _s: self._sync_analysis_views())
        self.attach_action.triggered.connect(self.server_view.ask_attach)
        self.server_view.attachedChanged.connect(self._show_attached)
        self.session.changed.connect(self._refresh_from_session)
        self.session.reload()
        self.profile_watcher = ProfileFolderWatcher(self.session, self)  # CLI / editor changes show up
        self._update_actions()

    # ---- construction --------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        a = self.actions_
        bar = QToolBar("Main")
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        bar.setIconSize(ICON_SIZE)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        a.launch.setIcon(icon("play", "#ffffff"))
        bar.addAction(a.launch)
        launch_button = bar.widgetForAction(a.launch)
        launch_button.setObjectName("launchButton")
        bar.addAction(a.stop)
        bar.addAction(a.plan)
        self.attach_action = attach_action(self)  # "Attach to server…": watch a server not launched here
        bar.addAction(self.attach_action)
        bar.addSeparator()
        for action in (a.new, a.import_, a.export, a.duplicate, a.rename, a.delete):
            bar.addAction(action)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        bar.addAction(a.shortcuts)
        self.addToolBar(bar)
        self.toolbar = bar

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.undo_button = QPushButton(icon("undo"), "Undo")
        self.undo_button.setFlat(True)
        self.undo_button.hide()
        self.undo_button.clicked.connect(self.undo_delete)
        bar.addPermanentWidget(self.undo_button)
        self.store_label = QLabel()
        self.store_label.setObjectName("sectionSubtitle")
        bar.addPermanentWidget(self.store_label)
        bar.showMessage("Ready")

    def _connect(self) -> None:
        a = self.actions_
        a.new.triggered.connect(self.new_profile)
        a.import_.triggered.connect(self.import_profile)
        a.export.triggered.connect(self.export_profile)
        a.save.triggered.connect(self.editor.save)
        a.duplicate.triggered.connect(self.duplicate_profile)
        a.rename.triggered.connect(self.rename_profile)
        a.delete.triggered.connect(self.delete_profile)
        a.undo_delete.triggered.connect(self.undo_delete)
        a.filter.triggered.connect(self.profile_list.focus_filter)
        a.shortcuts.triggered.connect(self.show_shortcuts)
        for i, action in enumerate(a.views):
            action.triggered.connect(lambda _c=False, i=i: self.view_tabs.setCurrentIndex(i))
        self.profile_list.currentChanged.connect(self._profile_picked)
        self.profile_list.newRequested.connect(self.new_profile)
        self.profile_list.importRequested.connect(self.import_profile)
        self.editor.saveRequested.connect(self._save)
        self.editor.dirtyChanged.connect(self._dirty_changed)
        self.editor.createRequested.connect(self.new_profile)
        self.editor.importRequested.connect(self.import_profile)

    def add_startup_problems(self, errors: list[DynoError]) -> None:
        """Files read before the window opened that could not be (settings, history): on the banner."""
        self.banner.add_startup_problems(errors)
        self._banner_box.setVisible(bool(self.banner.lines))

    # ---- session -> widgets --------------------------------------------------------------------
    def _refresh_from_session(self) -> None:
        s = self.session
        current = self.editor.profile_name
        self.profile_list.set_profiles(s.profiles, keep=current)
        if self.views.is_built("diff"):
            self.diff_view.set_profiles([sp.profile for sp in s.profiles])
        self.banner.set_errors(s.errors)
        self._banner_box.setVisible(bool(self.banner.lines))
        count = len(s.profiles)
        self.store_label.setText(f"{count} profile{'' if count == 1 else 's'} · {s.store.folder}")
        picked = self.profile_list.current_name()
        if picked != current or (picked is not None and self.editor.profile_name is None):
            self.editor.set_profile(s.get(picked) if picked else None)
        elif picked is None:
            self.editor.set_profile(None)
        elif not self.editor.is_dirty() and s.get(picked) != self.editor.saved_profile:
            # changed on disk (CLI, CPU-demo setup, an editor): show what is stored now, so that a
            # later Save does not write the old version back
            self.editor.set_profile(s.get(picked))
        self._update_actions()

    def _update_actions(self) -> None:
        has = self.editor.profile_name is not None
        for action in (
            self.actions_.export,
            self.actions_.duplicate,
            self.actions_.rename,
            self.actions_.delete,
        ):
            action.setEnabled(has)
        self.actions_.save.setEnabled(has)
        self.actions_.undo_delete.setEnabled(self.session.can_undo)
        if hasattr(self, "servers"):
            self.servers.refresh()
            self._sync_analysis_views()
        self.undo_button.setVisible(self.session.can_undo)
        self._update_title()

    # ---- deferred views: built on first show ---------------------------------------------------
    def _build_diff_view(self) -> DiffView:
        from llm_dyno.ui.views.diff_view import DiffView

        view = DiffView()
        view.set_profiles([sp.profile for sp in self.session.profiles])
        view.follow(self.editor.profile_name)
        return view

    def _build_bench_view(self) -> BenchmarkView:
        from llm_dyno.ui.bench.bench_view import BenchmarkView

        view = BenchmarkView(self.session, registry=self.bridge.manager, jobs=self.jobs)
        view.statusMessage.connect(lambda m: self.statusBar().showMessage(m, 8000))
        view.errorMessage.connect(self.show_error)
        view.benchmark_finished.connect(self.notify_benchmark_finished)
        view.launchRequested.connect(self.launch_server)
        view.stopRequested.connect(self.stop_server)
        view.set_target(*self._analysis_target())
        return view

    def _build_diagnostics_view(self) -> DiagnosticsView:
        from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView

        view = DiagnosticsView(self.session, registry=self.bridge.manager)
        view.statusMessage.connect(lambda m: self.statusBar().showMessage(m, 8000))
        view.errorMessage.connect(self.show_error)
        view.copyCreated.connect(self.select_profile)
        view.launchRequested.connect(self.launch_server)
        view.benchmarkRequested.connect(lambda: self.show_view("benchmark"))
        view.measureRequested.connect(self._measure_copy)
        view.set_target(*self._analysis_target())
        return view

    def _measure_copy(self, copy: str, original: str) -> None:
        """Diagnostics' one-click check: the copy selected, the Benchmark view's A/B against its original."""
        self.select_profile(copy)
        self.show_view("benchmark")
        self.bench_view.measure_against(original)

    def _build_servers_view(self) -> ServersOverview:
        """A double click on a row selects its profile and shows its (or the attached) dashboard."""
        from llm_dyno.ui.views.servers_overview import ServersOverview

        view = ServersOverview(self.bridge, attached=lambda: self.server_view.attached)
        view.openRequested.connect(self._open_dashboard)
        return view

    def _open_dashboard(self, profile: str) -> None:
        if profile:
            self.select_profile(profile)
        self.show_view("dashboard")

    def _build_tune_view(self) -> TuneView:
        from llm_dyno.ui.tune.tune_view import TuneView

        view = TuneView(self.session, registry=self.bridge.manager, jobs=self.jobs)
        view.statusMessage.connect(lambda m: self.statusBar().showMessage(m, 8000))
        view.errorMessage.connect(self.show_error)
        view.tune_finished.connect(self.notify_benchmark_finished)
        view.copyCreated.connect(self.select_profile)
        view.stopRequested.connect(self.stop_server)
        self.bridge.stopFinished.connect(view.server_stopped)
        view.set_target(*self._analysis_target())
        return view

    def _analysis_target(self) -> tuple[Profile | None, str | None]:
        """The selected profile and where its server answers (when ready)."""
        name = self.editor.profile_name
        profile = self.session.get(name) if name else None
        handle = self.bridge.handle(name) if name else None
        ready = handle is not None and handle.status.state is ServerState.READY
        return profile, handle.plan.base_url if handle is not None and ready else None

    def _sync_analysis_views(self) -> None:
        """Tell the benchmark and diagnostics views (those built) the selected profile and its URL,
        and the diff view (when built) which profile to follow."""
        target = self._analysis_target()
        if self.views.is_built("benchmark"):
            self.bench_view.set_target(*target)
        if self.views.is_built("diagnostics"):
            self.diagnostics_view.set_target(*target)
        if self.views.is_built("tune"):
            self.tune_view.set_target(*target)
        if self.views.is_built("diff"):
            self.diff_view.follow(self.editor.profile_name)

    def notify_benchmark_finished(self, summary: str) -> None:
        """A tray balloon when the tray icon is up, else the status bar."""
        tray = getattr(self, "tray", None)
        if isinstance(tray, QSystemTrayIcon) and tray.isVisible():
            tray.showMessage("Benchmark finished", summary, QSystemTrayIcon.MessageIcon.Information, 8000)
        else:
            self.statusBar().showMessage(summary, 15000)

    def _keep_sidebar(self) -> None:
        sizes = self.split.sizes()
        if len(sizes) == 2 and sizes[0] != self._sidebar_w:
            self.split.setSizes([self._sidebar_w, sum(sizes) - self._sidebar_w])

    def _update_title(self) -> None:
        name = self.editor.profile_name
        dirty = "• " if self.editor.is_dirty() else ""
        self.setWindowTitle(f"{dirty}{name} — {APP_TITLE}" if name else APP_TITLE)

    def _dirty_changed(self, dirty: bool) -> None:
        if self.editor.profile_name:
            self.profile_list.set_dirty(self.editor.profile_name, dirty)
        self._update_title()

    # ---- profile switching and unsaved changes -------------------------------------------------
    def confirm_discard(self) -> bool:
        """Ask what to do with unsaved changes; True when it is fine to move on."""
        if not self.editor.is_dirty() or not self.interactive:
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to “{self.editor.profile_name}”?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        if answer == QMessageBox.StandardButton.Save:
            if not self.editor.validation.ok:
                self.show_error("The profile has problems (marked in red); fix them or discard the changes.")
                return False
            self.editor.save()
        return True

    def _profile_picked(self, name: str) -> None:
        if name == self.editor.profile_name:
            return
        if not self.confirm_discard():
            previous = self.editor.profile_name
            if previous:
                self.profile_list.select(previous, notify=False)
            return
        if self.editor.profile_name:
            self.profile_list.set_dirty(self.editor.profile_name, False)
        self.editor.set_profile(self.session.get(name))
        self._update_actions()

    def select_profile(self, name: str) -> None:
        """Select and edit a profile by name."""
        if not self.profile_list.select(name):
            self.profile_list.filter.clear()
            self.profile_list.select(name)

    def _show_attached(self, server: object) -> None:
        if server is not None:
            self.show_view("dashboard")

    def show_view(self, key: str) -> None:
        """Switch to a view by key (profile, diff, dashboard, logs, benchmark, diagnostics, servers, tune)."""
        keys = [v[0] for v in VIEWS]
        if key not in keys:
            raise ValueError(f"unknown view {key!r}; choose from {', '.join(keys)}")
        self.view_tabs.setCurrentIndex(keys.index(key))

    def current_view(self) -> str:
        """Key of the view shown."""
        return str(self.view_tabs.tabData(self.view_tabs.currentIndex()))

    # ---- commands ------------------------------------------------------------------------------
    def show_error(self, message: str) -> None:
        """Tell the user something could not be done, once: a dialog, or the status bar when not
        interactive."""
        if self.interactive:
            QMessageBox.warning(self, APP_TITLE, message)
        else:
            self.statusBar().showMessage(message, 8000)

    def launch_server(self, name: str) -> None:
        """Launch a profile's server (a view's Launch button): it is selected, then launched as the
        toolbar's Launch does."""
        self.select_profile(name)
        self.servers.launch_selected()

    def stop_server(self, name: str) -> None:
        """Stop a profile's server (a view's Stop button): it is selected, then stopped as the toolbar's
        Stop does (asking first when it serves requests)."""
        self.select_profile(name)
        self.servers.stop_selected()

    def closeEvent(self, event: QCloseEvent) -> None:
        # unsaved changes first, then the servers still running (stop them, or leave them running:
        # the registry finds them again next time)
        if self.confirm_discard() and self.servers.confirm_quit():
            self.jobs.shutdown(deadline_s=15.0)  # cancel every job, wait for them: no thread outlives it
            event.accept()
        else:
            event.ignore()


def schedule_first_run(window: MainWindow) -> None:
    """Offer the shipped profiles once the window is up, when the store has never been used."""
    if window.session.store.is_first_run():
        QTimer.singleShot(0, window.offer_shipped_profiles)
