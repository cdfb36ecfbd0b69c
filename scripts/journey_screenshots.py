"""Drive the real window through the quick start and capture the screen at each step (see
scripts/journey-screenshots, which runs this under Xvfb with a fresh LLM_DYNO_HOME)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from llm_dyno.core.profiles.store import shipped_profiles
from llm_dyno.core.runtime.base import ServerState
from llm_dyno.ui import theme
from llm_dyno.ui.dialogs.doctor_dialog import DoctorDialog
from llm_dyno.ui.dialogs.first_run import FirstRunDialog
from llm_dyno.ui.main_window import MainWindow

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")


def wait(app: QApplication, done: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"journey: gave up waiting for {what} after {timeout_s:.0f} s")
        app.processEvents()
        time.sleep(0.05)


def settle(app: QApplication, seconds: float = 0.4) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def shot(app: QApplication, name: str, widget: QWidget | None = None) -> None:
    """The whole screen, as the user sees it (dialogs over the window), or one widget."""
    settle(app)
    screen = app.primaryScreen()
    image = widget.grab() if widget is not None else screen.grabWindow(0)
    path = OUT / f"journey-{name}.png"
    image.save(str(path))
    print(f"journey: {path}", flush=True)


def main() -> int:
    app = QApplication(sys.argv[:1])
    theme.apply(app, dark=False)
    window = MainWindow()
    window.interactive = False
    window.resize(1280, 770)
    window.move(0, 0)
    window.show()
    settle(app, 1.0)

    # 1. first run: the example profiles, each with a checkbox ("Add selected profiles")
    first = FirstRunDialog(shipped_profiles(), window)
    first.show()
    shot(app, "1-welcome")
    window.session.install_shipped(first.chosen())
    first.accept()

    # 2. the system check: no GPU here, so it offers the CPU demo
    doctor = DoctorDialog(window)
    doctor.show()
    wait(app, lambda: doctor.report is not None, 60, "the system check")
    shot(app, "2-check-system")

    # 3. Set up the CPU demo: the progress dialog (the venv is reused, the model is built)
    doctor.setup_demo.click()
    setup = doctor.demo_dialog
    if setup is None:
        raise SystemExit("journey: no setup dialog")
    wait(app, lambda: "build the tiny demo model" in setup.log.toPlainText(), 60, "the model build")
    shot(app, "3-setup-progress")
    wait(app, lambda: setup.profile_name is not None or setup.error is not None, 600, "the setup")
    if setup.error:
        raise SystemExit(f"journey: the setup failed: {setup.error}")
    settle(app, 0.5)
    shot(app, "3b-setup-ready")  # "Ready", Launch now / Close, cpu-demo selected behind it
    next(b for b in setup.buttons.buttons() if b.text() == "Close").click()
    settle(app, 0.5)

    # 4. cpu-demo selected, ready to Launch
    window.show_view("profile")
    shot(app, "4-ready-to-launch")

    # 5. Launch: the phases as they happen
    window.actions_.launch.trigger()
    panel = window.server_view.launch_panel
    wait(app, lambda: panel.current_step() is ServerState.LOADING_WEIGHTS
         or window.profile_list.lamp("cpu-demo") == "ready", 300, "weights loading")  # fmt: skip
    shot(app, "5-launching")
    wait(app, lambda: window.profile_list.lamp("cpu-demo") in ("ready", "failed"), 300, "ready")
    if window.profile_list.lamp("cpu-demo") != "ready":
        raise SystemExit("journey: cpu-demo did not start")

    # 6. the one-click benchmark, and the dashboard under its load
    window.show_view("benchmark")
    settle(app, 1.0)
    if not window.bench_view.start():
        raise SystemExit("journey: the benchmark did not start")
    window.show_view("dashboard")
    time.sleep(0.1)
    wait(app, lambda: window.bench_view.progress.value() >= 6, 600, "a few benchmark runs")
    shot(app, "6-dashboard-under-load")
    wait(app, lambda: not window.bench_view.worker.running, 900, "the benchmark")
    window.show_view("benchmark")
    shot(app, "7-benchmark")

    # 8. Diagnostics of the profile (its log, its latest result)
    window.show_view("diagnostics")
    diag = window.diagnostics_view
    diagnosed: list[object] = []
    diag.diagnosed.connect(lambda *a: diagnosed.append(a))
    diag.refresh()
    wait(app, lambda: bool(diagnosed), 120, "diagnostics")
    if diag.findings.findings:
        diag.findings.expand_finding(diag.findings.findings[0].id)
    shot(app, "8-diagnostics")

    # 9. Tune: with nothing to vary it names its own controls; while the server runs it offers Stop
    window.show_view("tune")
    tune = window.tune_view
    settle(app, 0.5)
    tune.run_button.click()
    settle(app, 0.3)
    shot(app, "9-tune-nothing-to-vary")
    tune.knob_combos[0].setEditText("max-num-seqs")
    tune.value_edits[0].setText("2, 4")
    tune.run_button.click()
    settle(app, 0.3)
    shot(app, "10-tune-refused-running")
    if not tune.fix_button.isVisible():
        raise SystemExit(f"journey: no Stop button beside the tune's refusal ({tune.status.text()})")

    # 11. its Stop button stops the server; the window says so
    tune.fix_button.click()
    wait(app, lambda: window.profile_list.lamp("cpu-demo") in ("stopped", "failed"), 60, "the stop")
    settle(app, 0.5)
    shot(app, "11-stopped-from-tune")
    window.bridge.shutdown()
    window.editor.set_profile(None)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
