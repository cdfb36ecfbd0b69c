"""Profile export: the CLI and the window offer the same formats, the registry's, and write the same text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llm_dyno.cli import run as run_cli
from llm_dyno.core.profiles import export_formats
from llm_dyno.core.profiles.export_formats import EXPORT_FORMATS, ExportFormat
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.ui.dialogs.export_dialog import ExportDialog
from tests.test_hostile_files import SHIPPED
from tests.test_small_hostile import cli


def dialog_text(qtbot, dialog: ExportDialog, key: str) -> str:  # type: ignore[no-untyped-def]
    dialog.format_box.setCurrentIndex(dialog.format_box.findData(key))
    return dialog.text.toPlainText()


def window_choices(dialog: ExportDialog) -> list[str]:
    return [dialog.format_box.itemData(i) for i in range(dialog.format_box.count())]


def test_cli_and_window_offer_the_registry_formats_and_write_the_same(
    tmp_path: Path,
    qtbot,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    assert cli(tmp_path, "profile", "import", str(SHIPPED), "--name", "demo").returncode == 0
    refused = cli(tmp_path, "profile", "export", "demo", "--format", "nope")
    assert refused.returncode == 2
    found = re.search(r"invalid choice: 'nope' \(choose from (.*)\)", refused.stderr)
    assert found, refused.stderr
    cli_choices = [c.strip().strip("'") for c in found.group(1).split(",")]
    assert cli_choices == list(EXPORT_FORMATS) and "yaml" in cli_choices  # the window lacked yaml before

    profile = ProfileStore().get("demo")
    dialog = ExportDialog(profile)
    qtbot.addWidget(dialog)
    assert window_choices(dialog) == list(EXPORT_FORMATS)
    for key in EXPORT_FORMATS:
        printed = cli(tmp_path, "profile", "export", "demo", "--format", key)
        shown = dialog_text(qtbot, dialog, key)
        if printed.returncode == 0:
            assert printed.stdout == shown and not dialog.error.text(), key
        else:  # a format that does not fit the profile: both refuse, saying the same
            assert printed.returncode == 2 and not shown and not dialog.save_button.isEnabled(), key
            assert (
                "has no container to export" in printed.stderr
                and "has no container to export" in dialog.error.text()
            )
    written = {k for k in EXPORT_FORMATS if dialog_text(qtbot, dialog, k)}
    assert written == {"vllm-serve", "yaml"}  # the shipped demo runs as a local process: no container
    assert "vllm serve" in dialog_text(qtbot, dialog, "vllm-serve")


def test_a_format_added_to_the_registry_reaches_the_cli_and_the_window(
    tmp_path: Path,
    qtbot,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    """The "Extending" section's claim: one registry entry, and both front ends have the format."""
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    assert cli(tmp_path, "profile", "import", str(SHIPPED), "--name", "demo").returncode == 0
    as_json = ExportFormat(lambda p: json.dumps(p.to_dict(), indent=1), ".json", "profile as JSON")
    monkeypatch.setitem(export_formats.EXPORT_FORMATS, "json", as_json)

    assert run_cli(["profile", "export", "demo", "--format", "json"]) == 0  # the in-process CLI entry
    printed = capsys.readouterr().out
    assert json.loads(printed)["name"] == "demo"
    dialog = ExportDialog(ProfileStore().get("demo"))
    qtbot.addWidget(dialog)
    assert window_choices(dialog)[-1] == "json"
    assert dialog.format_box.itemText(dialog.format_box.count() - 1) == "profile as JSON"
    assert dialog_text(qtbot, dialog, "json") == printed
