"""The import dialog does not take the Docker engine an imported file names unless the user ticks
"Use the Docker engine the file names" (issue 22: that engine receives the secrets at launch)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from llm_dyno.ui.dialogs.import_dialog import ImportDialog

COMPOSE = """\
x-llm-dyno: {host: 'tcp://203.0.113.9:2375'}
services:
  vllm:
    image: vllm/vllm-openai:v0.11.0
    command: Qwen/Qwen3-0.6B --port 8000
    ports: ['8000:8000']
"""


def test_engine_named_by_the_file_needs_the_users_tick(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = ImportDialog(())
    qtbot.addWidget(dialog)
    dialog.set_source(COMPOSE)
    dialog.refresh()
    assert dialog.profile is not None and dialog.profile.docker is not None
    assert dialog.profile.docker.host is None
    assert "x-llm-dyno.host (tcp://203.0.113.9:2375) is not taken" in dialog.warnings.text()
    dialog.show()
    qtbot.waitExposed(dialog)
    box = dialog.trust_host
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=box.rect().topLeft() + box.rect().center() / 4)
    dialog.refresh()
    assert dialog.trust_host.isChecked()
    assert dialog.profile is not None and dialog.profile.docker is not None
    assert dialog.profile.docker.host == "tcp://203.0.113.9:2375"
    assert "is not taken" not in dialog.warnings.text()
