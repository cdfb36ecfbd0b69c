"""The import dialog reads a compose file's env file outside its folder only when the user ticks "Read
env files outside the project folder" (issue 23; the CLI's --allow-env-file-outside); the secret in it
still becomes a reference."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from llm_dyno.ui.dialogs.import_dialog import ImportDialog

TOKEN = "hf_" + "W" * 34


def test_env_file_outside_the_folder_needs_the_users_tick(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "vars.env").write_text(f"HF_TOKEN={TOKEN}\nFROM_OUTSIDE=yes\n")
    compose = tmp_path / "proj" / "docker-compose.yml"
    compose.parent.mkdir()
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n    env_file: ../shared/vars.env\n"
    )
    dialog = ImportDialog(())
    qtbot.addWidget(dialog)
    dialog.set_source(compose.read_text(), str(compose))
    assert dialog.profile is None
    assert "is outside the project folder" in dialog.error.text()
    assert not dialog.import_button.isEnabled()

    dialog.show()
    qtbot.waitExposed(dialog)
    box = dialog.env_outside
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=box.rect().topLeft() + box.rect().center() / 4)
    dialog.refresh()
    assert box.isChecked()
    assert dialog.profile is not None, dialog.error.text()
    assert dialog.profile.env == {"HF_TOKEN": "${HF_TOKEN}", "FROM_OUTSIDE": "yes"}
    assert "read because you allowed it" in dialog.warnings.text()
    assert TOKEN not in dialog.preview.toPlainText() + dialog.warnings.text()
    assert dialog.import_button.isEnabled()
