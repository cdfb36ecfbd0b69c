"""Launch-plan warnings and the port-bind choice where the window shows a plan: the editor, the launch
panel (issue 16: the loopback bind is visible and the user can choose "as in the file")."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.launch_spec import PlanWarning, WarningKind
from llm_dyno.ui.views.launch_panel import LaunchPanel

MTP = "qwen36-27b-mtp"


def test_editor_shows_the_plan_warnings_and_the_bind_choice(  # type: ignore[no-untyped-def]
    window, qtbot, store: ProfileStore, tmp_path: Path
) -> None:
    window.select_profile(MTP)
    form = window.editor.form
    assert not form.plan_warnings.isHidden()
    assert "8020:8000" in form.plan_warnings.text() and "127.0.0.1 only" in form.plan_warnings.text()
    bind = form.editor("ports_bind")
    assert bind.currentData() == "loopback"
    bind.setCurrentIndex(bind.findData("file"))
    bind.activated.emit(bind.currentIndex())  # what a click on the item sends
    profile = window.editor.validation.profile
    assert profile is not None and profile.docker is not None and profile.docker.bind == "file"
    assert "127.0.0.1 only" not in form.plan_warnings.text()
    assert "reachable from the network" in form.plan_warnings.text()  # no --api-key: exposure warned
    qtbot.mouseClick(window.editor.save_button, Qt.MouseButton.LeftButton)
    stored = store.get(MTP)
    assert stored.docker is not None and stored.docker.bind == "file"
    form.grab().save(str(tmp_path / "editor-warnings.png"))
    window.resize(1280, 900)
    window.show()
    qtbot.waitExposed(window)
    form.ensureWidgetVisible(form.fields["ports_bind"])
    window.grab().save(str(tmp_path / "editor-container.png"))


def test_server_view_shows_the_plan_warnings(window, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.core.runtime.manager import ServerManager

    plan = ServerManager().plan(store.get(MTP))
    status = ServerStatus(ServerState.PULLING, 0.0, "pulling")
    # what the server controller calls on each status of a launch
    window.server_view.set_status(MTP, status, plan.base_url, plan.runtime, plan)
    panel = window.server_view.launch_panel
    assert not panel.warnings.isHidden()
    assert "127.0.0.1 only" in panel.warnings.text()
    exposure = next(w for w in plan.warnings if w.kind is WarningKind.EXPOSURE)
    assert f"⚠ Network: {exposure.text}" in panel.warnings.text().splitlines()


def test_launch_panel_lists_the_warnings(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    panel = LaunchPanel()
    qtbot.addWidget(panel)
    panel.resize(640, 420)
    panel.start("http://127.0.0.1:8020")
    panel.set_status(ServerStatus(ServerState.CREATING, 0.0, "creating container"))
    gpu = PlanWarning(
        WarningKind.GPU, "no GPUs requested: vLLM in the container will see none (set gpus: all)"
    )
    ports = PlanWarning(
        WarningKind.EXPOSURE, "ports 8020:8000 are published on 127.0.0.1 only (docker.bind: loopback)"
    )
    panel.set_warnings((gpu, ports))
    panel.show()
    # what exposes the server comes first, each under its kind
    assert panel.warnings.text().splitlines() == [f"⚠ Network: {ports.text}", f"⚠ GPU: {gpu.text}"]
    panel.set_warnings(())
    assert panel.warnings.isHidden()
    panel.set_warnings((gpu,))
    panel.grab().save(str(tmp_path / "launch-panel-warnings.png"))


def test_import_dialog_reads_the_project_folder(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.dialogs.import_dialog import ImportDialog

    folder = tmp_path / "proj"
    folder.mkdir()
    compose = folder / "docker-compose.yml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        "    command: ${MODEL} --max-model-len ${LEN:-4096}\n    ports: ['8000:8000']\n"
    )
    dialog = ImportDialog()
    qtbot.addWidget(dialog)
    dialog.set_source(compose.read_text(), str(compose))
    dialog.refresh()
    assert dialog.result_ is None and "not set" in dialog.error.text()
    assert "$MODEL is not set" in dialog.warnings.text()  # said even though the import failed
    (folder / ".env").write_text("MODEL=Qwen/Qwen3-8B\nLEN=65536\n")
    dialog.refresh()
    assert dialog.result_ is not None
    assert dialog.result_.profile.model == "Qwen/Qwen3-8B"
    assert dialog.result_.profile.args == ("--max-model-len", "65536")
    assert "127.0.0.1 only" in dialog.warnings.text()
