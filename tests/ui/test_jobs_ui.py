"""The window's side of the job layer: one job runner wired to the error funnel, one queue per GPU, and
quitting with servers running (asked; left running, they are found again by the next window)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from llm_dyno.core.jobs.gpu_lock import gpu_locks
from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.telemetry import nvml as nvml_module
from llm_dyno.ui.dashboard.power_control import PowerLimitControl
from llm_dyno.ui.errors import ErrorFunnel
from llm_dyno.ui.jobs_manager import JobsManager, WhenBusy
from llm_dyno.ui.servers import ServerBridge

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "tests" / "support" / "nvml_shim" / "pynvml.py"
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"


@pytest.fixture
def replayed_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded H200 at the NVML boundary of this process (see tests/support/nvml_shim)."""
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(RECORDING))
    spec = importlib.util.spec_from_file_location("replayed_pynvml_ui", SHIM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(lib=module))


def test_a_bug_in_a_job_reaches_the_error_funnel_with_its_traceback(qtbot) -> None:  # type: ignore[no-untyped-def]
    funnel = ErrorFunnel()
    funnel.suppress_dialogs = True
    funnel.install()
    try:
        runner = JobsManager().channel()
        failed: list[str] = []
        runner.failed.connect(failed.append)

        def work(_emit: object, _cancel: threading.Event) -> None:
            raise ZeroDivisionError("a bug in a job")

        runner.submit("broken job", ["a server"], work, WhenBusy.QUEUE)
        qtbot.waitUntil(lambda: bool(failed) and getattr(funnel, "last", None) is not None, timeout=5000)
        runner.wait(5)
    finally:
        funnel.uninstall()
    assert failed == ["broken job failed: ZeroDivisionError: a bug in a job"]
    message, details = funnel.last
    assert "ZeroDivisionError" in message and "Traceback" in details and "def work" not in message
    assert "raise ZeroDivisionError" in details


def test_the_power_control_waits_its_turn_behind_a_sweep_of_the_same_gpu(
    qtbot, ui_home: Path, replayed_nvml: None
) -> None:  # type: ignore[no-untyped-def]
    control = PowerLimitControl()
    qtbot.addWidget(control)
    control.refresh((0,))
    qtbot.waitUntil(lambda: control.apply_button.isEnabled(), timeout=5000)
    control.spin.setValue(400)
    with gpu_locks((0,), "the power-cap sweep of cpu-demo"):
        control.apply()
        qtbot.waitUntil(lambda: "being changed by" in control.status.text(), timeout=5000)
    assert "GPU 0 is being changed by the power-cap sweep of cpu-demo" in control.status.text()
    assert control.limits[0].current_w == 700.0  # nothing was changed
    control.apply()  # the sweep is over: now it goes through
    qtbot.waitUntil(lambda: control.limits.get(0) is not None and control.limits[0].current_w == 400.0)


def test_quitting_with_a_server_running_asks_and_the_next_window_finds_it(
    qtbot, ui_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    exe = tmp_path / "vllm"  # a stand-in server: what is tested is the window and the registry
    exe.write_text(f"#!{sys.executable}\nimport time\nprint('serving', flush=True)\ntime.sleep(120)\n")
    exe.chmod(0o755)
    model = tmp_path / "model"  # never read by the stand-in; a process profile's model folder must exist
    model.mkdir()
    ProfileStore().save(
        Profile(
            name="left-running",
            runtime=Runtime.PROCESS,
            process=ProcessSettings(executable=str(exe)),
            model=str(model),
            args=("--port", "18941"),
        )
    )
    first = MainWindow(bridge=ServerBridge(ServerManager()))
    first.interactive = False  # no modal dialog may block the test; the quit question is answered below
    qtbot.addWidget(first)
    first.show()
    first.select_profile("left-running")
    first.actions_.launch.trigger()
    qtbot.waitUntil(lambda: first.bridge.is_live("left-running"), timeout=10_000)

    asked: list[str] = []

    def answer(box: QMessageBox) -> int:
        asked.append(box.text())
        leave = next(b for b in box.buttons() if b.text() == "Leave running")
        box.setProperty("clicked", True)
        monkeypatch.setattr(QMessageBox, "clickedButton", lambda _self: leave)
        return 0

    monkeypatch.setattr(QMessageBox, "exec", answer)
    first.interactive = True
    assert first.close()
    assert asked == ["1 server is running: left-running."]
    first.bridge.shutdown()

    second = MainWindow(bridge=ServerBridge(ServerManager()))
    second.interactive = False
    qtbot.addWidget(second)
    second.show()
    second.bridge.follow_registry(interval_ms=300)
    qtbot.waitUntil(lambda: second.profile_list.lamp("left-running") == "loading", timeout=10_000)
    assert second.bridge.is_live("left-running")
    handle = second.bridge.handle("left-running")
    assert handle is not None and handle.stop(10).state.value == "stopped"
    second.bridge.shutdown()


def test_a_bug_in_the_system_check_is_shown_and_recheck_offered(  # type: ignore[no-untyped-def]
    qtbot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short task takes the jobs' error route: the doctor dialog says the checks did not finish and
    offers Re-check (it used to wait forever), and the funnel gets the traceback."""
    from llm_dyno.ui.dialogs import doctor_dialog

    def broken(_host: str | None) -> None:
        raise KeyError("a bug in a check")  # a bug, injected: no real check fails this way

    monkeypatch.setattr(doctor_dialog, "run_checks", broken)
    funnel = ErrorFunnel()
    funnel.suppress_dialogs = True
    funnel.install()
    try:
        dialog = doctor_dialog.DoctorDialog(start=False)
        qtbot.addWidget(dialog)
        dialog.start()
        assert not dialog.recheck.isEnabled()
        qtbot.waitUntil(lambda: dialog.recheck.isEnabled() and funnel.last is not None, timeout=5000)
    finally:
        funnel.uninstall()
    summary = dialog.summary.text()
    assert summary.startswith("The checks did not finish: the system check failed: KeyError"), summary
    message, details = funnel.last
    assert "KeyError" in message and "raise KeyError" in details
