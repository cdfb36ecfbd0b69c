"""The main window: delete and undo, broken files, import, diff, screenshot mode."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QImage

from llm_dyno.core.profiles.store import ProfileStore, shipped_profiles
from llm_dyno.ui.dialogs.import_dialog import ImportDialog, preview_import

FIXTURES = Path(__file__).resolve().parents[1] / "core" / "profiles" / "fixtures"
FOUNDING = FIXTURES / "founding-compose.yml"


def test_delete_and_undo(window, qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    name = "qwen36-27b-no-spec"
    window.select_profile(name)
    window.actions_.delete.trigger()
    assert name not in window.profile_list.names()
    assert not ProfileStore(store.folder).exists(name)
    assert window.undo_button.isVisibleTo(window)
    window.actions_.undo_delete.trigger()
    assert name in window.profile_list.names()
    assert ProfileStore(store.folder).exists(name)
    assert window.editor.profile_name == name
    assert not window.actions_.undo_delete.isEnabled()


def test_broken_file_shows_in_banner(qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    (store.folder / "broken.yaml").write_text(
        "schema: 1\nname: broken\nmodel: m\nruntime: docker\nbogus: 1\n"
    )
    from llm_dyno.ui.main_window import MainWindow

    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.show()
    assert w.banner.isVisibleTo(w)
    assert any(line.startswith("broken.yaml:") and "bogus" in line for line in w.banner.lines)
    assert len(w.profile_list.names()) == len(shipped_profiles())  # the others still load


def test_import_founding_compose_core_function() -> None:
    result = preview_import(FOUNDING.read_text(), source=str(FOUNDING), name="founding")
    assert result.source_kind == "compose"
    assert result.service == "vllm-qwen36-27b"
    assert result.profile.name == "founding"
    assert result.profile.engine().kv_cache_dtype == "fp8_e5m2"
    assert result.profile.engine().num_speculative_tokens == 3


def test_import_dialog_adds_profile(window, qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    dialog = ImportDialog(window.session.names(), window)
    qtbot.addWidget(dialog)
    dialog.set_source(FOUNDING.read_text(), str(FOUNDING))
    assert "docker-compose" in dialog.kind_label.text()
    assert dialog.import_button.isEnabled()
    assert "kv-cache-dtype" in dialog.preview.toPlainText()
    dialog.name_edit.setText("founding")
    dialog.refresh()
    assert dialog.profile is not None and dialog.profile.name == "founding"
    window.add_imported(dialog.profile)
    assert "founding" in window.profile_list.names()
    assert window.editor.profile_name == "founding"
    assert ProfileStore(store.folder).get("founding").engine().max_model_len == 75000


def test_import_dialog_reports_errors(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = ImportDialog(())
    qtbot.addWidget(dialog)
    dialog.set_source("services:\n  web:\n    image: nginx\n")
    assert not dialog.import_button.isEnabled()
    assert dialog.error.text()


def test_diff_view_rows_for_two_shipped_profiles(window) -> None:  # type: ignore[no-untyped-def]
    window.show_view("diff")
    window.diff_view.compare("qwen36-27b-mtp", "qwen36-27b-no-spec")
    diff = window.diff_view.diff
    assert diff is not None and not diff.is_empty
    keys = [r.key for r in diff]
    tree = window.diff_view.tree
    shown = [tree.topLevelItem(i).text(0).strip() for i in range(tree.topLevelItemCount())]
    for key in keys:
        assert key in shown
    assert any("speculative" in k for k in keys)
    window.diff_view.compare("qwen36-27b-mtp", "qwen36-27b-mtp")
    assert window.diff_view.stack.currentWidget() is window.diff_view.same


def test_duplicate_rename_new(window, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    window.select_profile("cpu-demo")
    window.duplicate_profile()
    assert window.editor.profile_name == "cpu-demo copy"
    window.rename_profile("cpu-demo two")
    assert "cpu-demo two" in window.profile_list.names()
    assert "cpu-demo copy" not in window.profile_list.names()
    window.new_profile()
    assert window.editor.profile_name == "New profile"
    assert ProfileStore(store.folder).exists("New profile")


def test_filter_and_views(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window.profile_list.filter.setText("no-spec")
    assert window.profile_list.proxy.rowCount() == 1
    window.profile_list.filter.clear()
    for i, action in enumerate(window.actions_.views):
        action.trigger()
        assert window.stack.currentIndex() == i
    assert window.actions_.shortcut_list()


def test_screenshot_mode_writes_png(tmp_path: Path, store: ProfileStore) -> None:
    out = tmp_path / "shot.png"
    exe = shutil.which("llm-dyno", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "llm_dyno"]
    subprocess.run(
        [*cmd, "--screenshot", str(out), "--view", "diff", "--size", "900x600"], check=True, timeout=120
    )
    image = QImage(str(out))
    assert not image.isNull()
    assert (image.width(), image.height()) == (900, 600)


def test_diff_view_follows_the_selected_profile(window) -> None:  # type: ignore[no-untyped-def]
    """Selecting a profile puts it on the left of the Diff view, against its closest sibling."""
    window.show_view("diff")
    window.select_profile("qwen36-27b-no-spec")
    dv = window.diff_view
    assert dv.left_box.currentText() == "qwen36-27b-no-spec"
    assert dv.right_box.currentText() == "qwen36-27b-mtp"  # one flag apart: the closest
    assert dv.diff is not None and [r.key for r in dv.diff] == ["--speculative-config"]
    window.select_profile("cpu-demo")
    assert dv.left_box.currentText() == "cpu-demo" and dv.right_box.currentText() == "qwen36-27b-mtp"
    window.select_profile("qwen36-27b-mtp")  # on the right already: it moves left, the right changes
    assert dv.left_box.currentText() == "qwen36-27b-mtp" and dv.right_box.currentText() != "qwen36-27b-mtp"


def test_profiles_changed_on_disk_appear_without_a_restart(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A profile imported by the CLI (another process) shows up; one edited in a text editor changes;
    one deleted goes; each burst of changes is one reload."""
    import os
    import subprocess
    import sys

    compose = tmp_path / "compose.yml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        "    command: --model Qwen/Qwen3-0.6B --port 8123\n"
    )
    env = {**os.environ}
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "profile", "import", str(compose), "--name", "from-cli"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    qtbot.waitUntil(lambda: "from-cli" in window.profile_list.names(), timeout=5000)
    before = window.profile_watcher.reloads
    path = window.session.store.path_for("from-cli")
    path.write_text(
        path.read_text().replace("--port\n- '8123'", "--port\n- '8124'")
    )  # in place, as an editor
    qtbot.waitUntil(lambda: "8124" in (window.session.get("from-cli").args or ()), timeout=5000)
    assert window.profile_watcher.reloads == before + 1
    # the store's own files in the folder (its index, a stray temp file) change no profile: no reload,
    # so the dashboards and views of the window stay as they are (a reload rebuilt them)
    for extra in (".index.json", ".index-data.json", "notes.txt"):
        (path.parent / extra).write_text("{}")
    qtbot.wait(1000)  # past the watcher's debounce
    assert window.profile_watcher.reloads == before + 1
    path.unlink()
    qtbot.waitUntil(lambda: "from-cli" not in window.profile_list.names(), timeout=5000)


def test_the_sidebar_keeps_its_width_on_every_view(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import VIEWS

    window.resize(1100, 760)  # a laptop's window: the widest view must still fit beside the sidebar
    window.select_profile("cpu-demo")
    qtbot.waitUntil(lambda: window.profile_list.width() > 0)
    width = window.profile_list.width()
    for key, *_ in VIEWS:
        window.show_view(key)
        qtbot.wait(300)  # the view is built and laid out
        assert window.profile_list.width() == width, (key, window.profile_list.width(), width)
    window.show_view("profile")
    qtbot.wait(100)
    assert window.profile_list.width() == width
