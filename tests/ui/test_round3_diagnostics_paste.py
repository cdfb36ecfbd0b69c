"""Issue 28 in the window: "Paste…" in the Diagnostics view takes a launch log or a forum post as text
(pasted with Ctrl+V from the clipboard, as a user does), guesses which it is, reads it as the CLI reads
``diagnose --post -`` / ``--log FILE`` (the same facts at the same lines, checked against the CLI run in
a subprocess on the same text), bounds its size, and stores nothing of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from llm_dyno.ui.diagnostics.paste_dialog import MAX_PASTE_BYTES, PasteDialog, PasteKind, guess_kind
from tests.ui.diagnostics_window import save_shot

REPO = Path(__file__).resolve().parents[2]
FOUNDING_POST = REPO / "tests" / "fixtures" / "diagnose" / "founding_post.txt"
# a real MTP start-up and runtime log (its source is in its header)
LAUNCH_LOG = REPO / "tests" / "fixtures" / "logs" / "ref_mtp_startup_and_runtime.log"
PROFILE, REFERENCE = "qwen36-27b-mtp", "recipe-3090-claimed"


@pytest.fixture
def view(diagnostics, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))  # where a pasted log is read from
    v = diagnostics(PROFILE, REFERENCE)
    v.resize(1400, 900)
    v.show()
    return v


def cli_json(home: Path, *args: str, stdin: str = "") -> dict:  # type: ignore[type-arg]
    """``llm-dyno diagnose PROFILE --reference REFERENCE ARGS --json`` with ``stdin`` as its input."""
    run = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "diagnose", PROFILE, "--reference", REFERENCE, *args, "--json"],
        env={**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def paste(qtbot, view: DiagnosticsView, text: str) -> PasteDialog:  # type: ignore[no-untyped-def]
    """Click "Paste…", put ``text`` on the clipboard and press Ctrl+V in the dialog's text box."""
    qtbot.mouseClick(view.paste_button, Qt.MouseButton.LeftButton)
    dialog = view.read_inputs.paste_dialog
    qtbot.waitExposed(dialog)
    QApplication.clipboard().setText(text)
    qtbot.mouseClick(dialog.text_box.viewport(), Qt.MouseButton.LeftButton)
    QTest.keyClick(dialog.text_box, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    return dialog


def read(qtbot, view: DiagnosticsView, dialog: PasteDialog) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        qtbot.mouseClick(dialog.read_button, Qt.MouseButton.LeftButton)


def boot_cells(view: DiagnosticsView) -> dict[str, tuple[str, str]]:
    """Each boot fact's value in the view and where it came from (the cell's tooltip's last line)."""
    out = {}
    for row, cells in enumerate(view.boot.texts()):
        cell = view.boot.item(row, 1)
        out[cells[0][2:]] = (cell.text(), cell.toolTip().splitlines()[-1])
    return out


def test_a_pasted_post_reads_as_the_cli_reads_post_from_stdin(
    qtbot, view: DiagnosticsView, ui_home: Path
) -> None:  # type: ignore[no-untyped-def]
    text = FOUNDING_POST.read_text(encoding="utf-8")
    dialog = paste(qtbot, view, text)
    assert dialog.text() == text
    assert dialog.kind() is PasteKind.POST and "read as a post (guessed)" in dialog.size_label.text()
    dialog.text_box.moveCursor(QTextCursor.MoveOperation.Start)  # the post's first lines in the shot
    save_shot(qtbot, dialog, "diagnostics-paste.png")
    read(qtbot, view, dialog)
    assert view.paste_button.text() == f"Pasted: post, {len(text.splitlines())} lines"
    assert "post pasted" in view.sources.text() and "from the post" in view.sources.text()
    expected = cli_json(ui_home, "--post", "-", stdin=text)
    cells = boot_cells(view)
    stated = [r for r in expected["boot_log"] if r["yours_where"].startswith("post line ")]
    assert len(stated) >= 5  # the downgrade, the backend, the sizes, the weights, the patches …
    for row in stated:
        assert cells[row["fact"]] == (row["yours"], row["yours_where"]), row["fact"]
    assert expected["gap_split"]["verdict"] in view.split_label.text()


def test_a_pasted_launch_log_reads_as_the_cli_reads_the_log_file(  # type: ignore[no-untyped-def]
    qtbot, view: DiagnosticsView, ui_home: Path, tmp_path: Path
) -> None:
    text = LAUNCH_LOG.read_text(encoding="utf-8")
    dialog = paste(qtbot, view, text)
    assert dialog.kind() is PasteKind.LOG and "read as a launch log (guessed)" in dialog.size_label.text()
    read(qtbot, view, dialog)
    lines = len(text.split("\n"))
    assert f"log pasted-log.txt ({lines} lines)" in view.sources.text()
    saved = tmp_path / "the-log.log"
    saved.write_text(text, encoding="utf-8")
    expected = cli_json(ui_home, "--log", str(saved))
    cells = boot_cells(view)
    from_log = [r for r in expected["boot_log"] if r["yours_where"].startswith("log:")]
    assert from_log, "the CLI read no boot fact from the log"
    for row in from_log:
        assert cells[row["fact"]] == (row["yours"], row["yours_where"]), row["fact"]
    assert not list((tmp_path / "tmp").iterdir())  # the log was read from a file gone at once
    # a log file chosen afterwards replaces the paste, as --log does
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_log(saved)
    assert view.paste_button.text() == "Paste…" and "log the-log.log" in view.sources.text()


def test_the_choice_overrides_the_guess_and_an_empty_read_forgets_the_paste(
    qtbot, view: DiagnosticsView
) -> None:  # type: ignore[no-untyped-def]
    text = LAUNCH_LOG.read_text(encoding="utf-8")
    dialog = paste(qtbot, view, text)
    dialog.kind_combo.setCurrentIndex(dialog.kind_combo.findData(PasteKind.POST))
    assert "read as a post" in dialog.size_label.text() and "guessed" not in dialog.size_label.text()
    read(qtbot, view, dialog)
    assert "post pasted" in view.sources.text() and view.post is not None
    dialog = view.read_inputs.open_paste_dialog()  # opened again: the paste is there to change
    assert dialog.text() == text
    dialog.text_box.clear()
    assert dialog.note.text() == "Empty: “Read” forgets the pasted text."
    read(qtbot, view, dialog)
    assert view.paste_button.text() == "Paste…" and view.post is None and view.read_inputs.pasted is None
    assert "pasted" not in view.sources.text()


def test_a_paste_over_the_bound_is_refused_and_says_so(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    line = "(APIServer pid=1) INFO 05-03 18:41:34 [loggers.py:1] Engine 000: Avg generation throughput\n"
    huge = line * (MAX_PASTE_BYTES // len(line) + 1)
    dialog = paste(qtbot, view, huge)
    assert dialog.text() == ""
    assert dialog.note.text().startswith("not pasted: 2.0 MiB is over the 2 MiB a paste holds")
    assert not dialog.read_button.isEnabled()
    # a post is read up to 1 MiB, as `diagnose --post` reads one: 1.5 MiB of prose is refused as a post
    prose = "My 3090 gets ~43 narrative / ~54 code TPS at 330W, acceptance 93/87/74%.\n"
    QApplication.clipboard().setText(prose * (3 * 1024 * 1024 // 2 // len(prose)))
    QTest.keyClick(dialog.text_box, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert dialog.kind() is PasteKind.POST and not dialog.read_button.isEnabled()
    assert "MiB is over the 1 MiB a post is read up to" in dialog.note.text()
    dialog.kind_combo.setCurrentIndex(dialog.kind_combo.findData(PasteKind.LOG))
    assert dialog.read_button.isEnabled()  # as a launch log it fits


def test_nothing_pasted_is_stored(qtbot, view: DiagnosticsView, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    marker = "sk-pasted-4f1d9c0e77"  # a key someone left in what they pasted
    text = FOUNDING_POST.read_text(encoding="utf-8") + f"\nVLLM_API_KEY={marker}\n"
    view.narr_box.setValue(40.0)
    view.typed_inputs.changed.emit()  # the typed numbers are remembered: the paste is not
    read(qtbot, view, paste(qtbot, view, text))
    view.close()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "diagnostics-typed.json" for p in written), written  # something was written
    for p in written:
        assert marker.encode() not in p.read_bytes(), p


def test_the_guess_reads_log_levels() -> None:
    assert guess_kind(LAUNCH_LOG.read_text(encoding="utf-8")) is PasteKind.LOG
    assert guess_kind(FOUNDING_POST.read_text(encoding="utf-8")) is PasteKind.POST
    assert guess_kind("") is PasteKind.POST
