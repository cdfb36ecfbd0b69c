"""Desktop integration: tray, notifications, single instance, settings, layout, doctor, error funnel."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QStatusBar

from llm_dyno.core.doctor import CheckResult, DoctorReport, Level
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.base import FailureKind, FailureReason, ServerState, ServerStatus
from llm_dyno.core.settings import Settings, Theme
from llm_dyno.core.settings import load as load_settings
from llm_dyno.ui import notify, theme
from llm_dyno.ui.servers import ServerBridge


def status(state: ServerState, **kw: object) -> ServerStatus:
    return ServerStatus(state, time.time(), **kw)  # type: ignore[arg-type]


@pytest.fixture
def notifier() -> Iterator[notify.Notifier]:
    bar = QStatusBar()
    n = notify.Notifier(None, bar)
    notify.install(n)
    yield n
    notify.install(None)


def test_tray_menu_follows_server_states(qtbot, ui_home: Path, notifier: notify.Notifier) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QWidget

    from llm_dyno.ui.tray import ServerTray

    window = QWidget()
    qtbot.addWidget(window)
    bridge = ServerBridge()
    stopped: list[str] = []
    bridge.stop = lambda name, timeout=30.0: stopped.append(name)  # type: ignore[method-assign]
    quits: list[int] = []
    tray = ServerTray(window, bridge, quit_app=lambda: quits.append(1))
    assert tray.entries() == ["Show LLM Dyno", "---", "No servers running", "---", "Quit"]

    bridge.statusChanged.emit("qwen", status(ServerState.LOADING_WEIGHTS))
    bridge.statusChanged.emit("cpu-demo", status(ServerState.STARTING))
    assert tray.entries() == [
        "Show LLM Dyno",
        "---",
        "cpu-demo — starting",
        "Stop cpu-demo",
        "qwen — loading weights",
        "Stop qwen",
        "---",
        "Quit",
    ]
    assert "2 running, 0 ready" in tray.icon.toolTip()

    bridge.statusChanged.emit("qwen", status(ServerState.READY))
    assert "qwen — ready" in tray.entries()
    assert notifier.sent[-1].title == "“qwen” is ready" and notifier.sent[-1].channel == "status"

    failure = FailureReason(FailureKind.KV_CACHE_TOO_SMALL, "KV cache too small for max_model_len")
    bridge.statusChanged.emit("cpu-demo", status(ServerState.FAILED, failure=failure))
    assert "cpu-demo — starting" not in tray.entries()
    assert notifier.sent[-1].title == "“cpu-demo” crashed"
    assert "KV cache too small" in notifier.sent[-1].text
    assert notifier.sent[-1].kind is notify.Kind.ERROR

    stop = next(a for a in tray.menu.actions() if a.text() == "Stop qwen")
    stop.trigger()
    assert stopped == ["qwen"]
    bridge.stopFinished.emit("qwen")
    assert "No servers running" in tray.entries()
    next(a for a in tray.menu.actions() if a.text() == "Quit").trigger()
    assert quits == [1]


def test_notification_falls_back_to_status_bar(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QSystemTrayIcon

    bar = QStatusBar()
    qtbot.addWidget(bar)
    hidden_tray = QSystemTrayIcon()  # never shown (and offscreen has no tray): not usable
    n = notify.Notifier(hidden_tray, bar)
    notify.install(n)
    try:
        sent = notify.notify("Benchmark done", "narrative 43.1 tok/s, code 54.0 tok/s", "success")
    finally:
        notify.install(None)
    assert sent is not None and sent.channel == "status"
    assert bar.currentMessage() == "Benchmark done — narrative 43.1 tok/s, code 54.0 tok/s"
    assert notify.notify("nobody", "listens") is None  # no notifier installed: dropped, no error
    assert notify.Notifier().notify("t", "x").channel == "none"


def test_single_instance_second_launch_raises_first(qtbot) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.single_instance import SingleInstance

    key = f"llm-dyno-test-{uuid.uuid4().hex[:8]}"
    first = SingleInstance(key)
    assert first.claim() is True
    try:
        second = SingleInstance(key)
        with qtbot.waitSignal(first.raiseRequested, timeout=3000):
            assert second.claim() is False
        assert second.server is None
    finally:
        first.release()
    # the first is gone: a new launch becomes the primary (and clears any stale socket)
    third = SingleInstance(key)
    assert third.claim() is True
    third.release()


def test_settings_dialog_applies_theme_live_and_saves(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.dialogs.settings_dialog import SettingsDialog

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    dialog = SettingsDialog(settings=Settings(theme=Theme.LIGHT))
    qtbot.addWidget(dialog)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    assert theme.colors().dark  # applied at once
    dialog.reject()
    assert not theme.colors().dark  # cancel puts it back

    dialog = SettingsDialog(settings=Settings(theme=Theme.LIGHT))
    qtbot.addWidget(dialog)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.docker_host.setText("ssh://me@gpubox")
    dialog.interval.setValue(2.5)
    dialog.accept()
    assert dialog.result() == dialog.DialogCode.Accepted
    saved = load_settings()
    assert saved == Settings(theme=Theme.DARK, docker_host="ssh://me@gpubox", sample_interval_s=2.5)
    assert theme.colors().dark
    theme.apply(app, dark=False)


def _window():  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    w = MainWindow()
    w.interactive = False
    return w


def test_layout_remembered_across_windows(qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QSplitter

    from llm_dyno.ui.dialogs.settings_dialog import layout_store, remember_layout

    first = _window()
    qtbot.addWidget(first)
    remember_layout(first)
    first.resize(1500, 900)
    first.show()
    qtbot.waitExposed(first)
    split = first.centralWidget()
    assert isinstance(split, QSplitter)
    split.setSizes([380, 1119])
    QApplication.processEvents()
    sizes = split.sizes()
    assert sizes[0] == 380
    first.select_profile("qwen36-27b-no-spec")
    first.show_view("logs")
    geometry, state = first.saveGeometry(), split.saveState()
    first.close()  # saves the layout
    stored = layout_store()
    assert stored.value("window/geometry") == geometry
    assert stored.value("window/splitter") == state

    second = _window()
    qtbot.addWidget(second)
    remember_layout(second)
    second.show()
    qtbot.waitExposed(second)
    QApplication.processEvents()
    assert second.current_view() == "logs"
    assert second.editor.profile_name == "qwen36-27b-no-spec"
    split2 = second.centralWidget()
    assert isinstance(split2, QSplitter)
    screen = QApplication.primaryScreen().availableGeometry()
    if screen.width() >= 1500 and screen.height() >= 900:  # offscreen's screen is 800x800: Qt fits to it
        assert (second.width(), second.height()) == (1500, 900)
        assert split2.sizes() == sizes
    second.editor.set_profile(None)


def test_install_desktop_adds_menus_and_f1_shortcuts(qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.tray import install_desktop

    w = _window()
    qtbot.addWidget(w)
    desktop = install_desktop(w, w.bridge, with_tray=False)
    try:
        menus = [a.text() for a in w.menuBar().actions()]
        assert menus == ["&File", "&Help"]
        listed = dict(w.actions_.shortcut_list())
        assert "Ctrl+," in listed and "Theme" in listed["Ctrl+,"]
        assert "Ctrl+Shift+K" in listed and "Docker" in listed["Ctrl+Shift+K"]
        assert notify.current() is desktop.notifier
    finally:
        notify.install(None)
        w.editor.set_profile(None)


def test_doctor_dialog_shows_findings_and_steps(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.dialogs.doctor_dialog import DoctorDialog

    report = DoctorReport(
        (
            CheckResult("docker", "Docker engine", Level.OK, "reachable"),
            CheckResult("nvidia-runtime", "NVIDIA container runtime", Level.WARNING, "missing", ("sudo x",)),
        ),
        recommend_cpu_demo=True,
    )
    dialog = DoctorDialog(start=False)
    qtbot.addWidget(dialog)
    dialog.show_report(report)
    text = dialog.view.toPlainText()
    assert "NVIDIA container runtime" in text and "sudo x" in text and "cpu-demo" in text
    assert dialog.summary.text() == (
        "1 ok · 1 warning · 0 problems — no GPU: set up the CPU demo to try every view; "
        "the rest matters only for GPU profiles"
    )
    dialog._copy()
    assert "[warn] NVIDIA container runtime: missing" in QApplication.clipboard().text()

    # the real checks in a worker: an unreachable engine is reported, the GUI never blocks
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    live = DoctorDialog()
    qtbot.addWidget(live)
    qtbot.waitUntil(lambda: live.report is not None, timeout=20000)
    assert live.report is not None
    docker = live.report.get("docker")  # no GPU here: Docker is needed only for Docker profiles
    assert docker.level is Level.WARNING and "the CPU demo does not need Docker" in docker.finding
    assert "Error while fetching" not in live.view.toPlainText()
    shown = live.view.toPlainText()  # the window's words: its own button, no command line
    assert "llm-dyno demo setup" not in shown and "“Set up the CPU demo” button below" in shown
    assert live.summary.text() == live.report.summary() and "1 problems" not in live.summary.text()
    folder = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if folder:
        live.resize(760, 640)
        live.grab().save(str(Path(folder) / "journey-2-check-system.png"))


# ---- the error funnel: nothing closes the app silently ---------------------------------------------


def _close_error_dialogs(seen: list[tuple[str, str]]) -> QTimer:
    """Poll for the modal error dialog, record what it shows, and close it."""
    from llm_dyno.ui.errors import ErrorDialog

    timer = QTimer()

    def poll() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, ErrorDialog):
            seen.append((dialog.message.text(), dialog.details.toPlainText()))
            dialog.reject()

    timer.timeout.connect(poll)
    timer.start(50)
    return timer


@pytest.mark.qt_no_exception_capture
def test_error_funnel_dialog_for_timer_slot_and_thread(qtbot) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.errors import ErrorFunnel

    funnel = ErrorFunnel()
    funnel.install()
    seen: list[tuple[str, str]] = []
    closer = _close_error_dialogs(seen)
    try:

        def slot() -> None:
            raise ValueError("boom in a timer slot")

        QTimer.singleShot(0, slot)
        qtbot.waitUntil(lambda: len(seen) == 1, timeout=5000)

        def work() -> None:
            raise RuntimeError("boom in a worker thread")

        t = threading.Thread(target=work, name="test-worker")
        t.start()
        t.join()
        qtbot.waitUntil(lambda: len(seen) == 2, timeout=5000)
    finally:
        closer.stop()
        funnel.uninstall()
    (msg1, details1), (msg2, details2) = seen
    assert msg1 == "ValueError: boom in a timer slot"
    assert msg2 == "RuntimeError: boom in a worker thread"
    for details in (details1, details2):
        assert "LLM Dyno 0." in details
        assert "Python 3." in details
        assert "Qt 6." in details and "PySide6 6." in details
        assert "vLLM " in details
        assert "Traceback (most recent call last)" in details
    assert "def slot" not in details1 and "in slot" in details1
    assert "in work" in details2
    # the app is still alive and processes events after both
    done: list[int] = []
    QTimer.singleShot(0, lambda: done.append(1))
    qtbot.waitUntil(lambda: done == [1], timeout=2000)
