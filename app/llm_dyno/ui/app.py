"""Start the GUI: the application object, style, error funnel and the main window.

``run_app(screenshot=FILE)`` renders the window offscreen at ``size`` with ``view`` shown, saves a PNG
and returns 0 without entering the event loop.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

from llm_dyno import __version__
from llm_dyno.core.errors import DynoError

# What the window needs that is not Qt, imported before PySide6: once PySide6 is loaded, every module
# imported after it has its source read (its `from __feature__` check; ~500 modules, and their text kept
# in linecache): ~15 % of a cold start's CPU and ~10 MiB (benchmarks/startup.py)
# Imported before Qt's modules (pydantic's import is slower once shiboken's import hooks are in place).
# numpy and pyqtgraph are not among them: nothing on the first screen plots, so they load with the first
# dashboard or chart (benchmarks/startup.py).
BEFORE_QT = ("llm_dyno.core.profiles.store",)  # the profile list: pydantic, yaml
ORG_NAME = "LLM Dyno"
APP_NAME = "LLM Dyno"


def parse_size(size: str) -> tuple[int, int]:
    """``"1280x800"`` → (1280, 800)."""
    try:
        w, h = (int(x) for x in size.lower().split("x", 1))
    except ValueError:
        raise ValueError(f"size {size!r}: expected WIDTHxHEIGHT, e.g. 1280x800") from None
    if w < 200 or h < 150:
        raise ValueError(f"size {size!r} is too small (at least 200x150)")
    return w, h


def startup_problems() -> list[DynoError]:
    """Files the window reads before it opens, checked so that a broken one is named on its banner
    instead of stopping it: the settings file (defaults are used; the file is kept as it is) and the
    history database (the Benchmark view says the same where it lists results)."""
    from llm_dyno.core import settings as core_settings
    from llm_dyno.core.history.store import HistoryStore

    problems: list[DynoError] = []
    try:
        core_settings.load()
    except DynoError as exc:
        problems.append(exc)
    try:
        with HistoryStore() as history:
            history.list(limit=1)  # opening alone reads only the first page
    except DynoError as exc:
        problems.append(exc)
    return problems


def run_app(screenshot: str | None = None, view: str | None = None, size: str = "1280x800") -> int:
    """Open the main window (or render it to ``screenshot``); returns the exit code."""
    # Start-up builds tens of thousands of objects that live until quitting (modules, classes, the
    # window) and next to no garbage: no collections while it runs, then those objects are frozen out
    # of every later collection (the GUI thread's pauses, and the last passes at exit: ~15 % of a cold
    # start's CPU; benchmarks/startup.py).
    gc.disable()
    try:
        return _run_app(screenshot, view, size)
    finally:
        gc.enable()


def _start_up_done() -> None:
    gc.freeze()
    gc.enable()


def _run_app(screenshot: str | None, view: str | None, size: str) -> int:
    if screenshot:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    width, height = parse_size(size)

    for module in BEFORE_QT:
        importlib.import_module(module)
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from llm_dyno.ui.errors import ErrorFunnel
    from llm_dyno.ui.icons import app_icon
    from llm_dyno.ui.main_window import MainWindow, schedule_first_run

    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName(ORG_NAME)
    app.setApplicationDisplayName(APP_NAME)
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("org.llmdyno.LLMDyno")  # the .desktop file id: notifications and the dock use it
    app.setWindowIcon(app_icon())
    from llm_dyno.core import settings as core_settings
    from llm_dyno.ui.dialogs.settings_dialog import apply_theme, load_settings

    app_settings = load_settings()
    apply_theme(app_settings.theme, app)
    core_settings.apply(app_settings)  # default Docker host and data folder, before anything reads them
    problems = startup_problems()
    instance = None
    if not screenshot:
        from llm_dyno.ui.single_instance import SingleInstance

        instance = SingleInstance(parent=app)
        if not instance.claim():
            print("LLM Dyno is already running: its window was brought to the front")
            return 0
    funnel = ErrorFunnel(app)
    funnel.install()

    window = MainWindow()
    funnel.dialog_parent = window
    if problems:
        window.add_startup_problems(problems)
    if view:
        window.show_view(view)

    if screenshot:
        funnel.suppress_dialogs = True
        window.interactive = False
        window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        window.resize(width, height)
        window.show()
        _start_up_done()
        for _ in range(5):
            app.processEvents()
        ok = window.grab().save(screenshot)
        window.close()
        funnel.uninstall()
        if not ok:
            print(f"error: cannot write {screenshot}", file=sys.stderr)
            return 1
        return 0

    window.resize(width, height)
    from llm_dyno.ui.tray import install_desktop

    desktop = install_desktop(window, window.bridge)  # tray, notifications, menus, remembered layout
    if instance is not None:
        instance.raiseRequested.connect(desktop.tray.show_window)
    window.show()
    _start_up_done()
    # once the window is up: the servers that run now (launched before, or from the CLI), and every
    # launch or stop made elsewhere from then on
    QTimer.singleShot(0, window.bridge.follow_registry)
    from llm_dyno.ui.dialogs.doctor_dialog import schedule_system_check

    schedule_system_check(window, after=schedule_first_run)  # first run: profiles, then the system check
    # the style follows the system when it switches between light and dark (unless set to one)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: apply_theme(load_settings().theme, app))
    code = app.exec()
    funnel.uninstall()
    return int(code)
