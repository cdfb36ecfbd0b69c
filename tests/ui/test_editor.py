"""The profile editor: loading, in-place flag edits, validation, the YAML tab, saving."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.profiles.edit import get_flag
from llm_dyno.core.profiles.store import ProfileStore

MTP = "qwen36-27b-mtp"


def _pick(window, name: str) -> None:  # type: ignore[no-untyped-def]
    window.select_profile(name)
    assert window.editor.profile_name == name


def test_editor_loads_profile(window, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    profile = store.get(MTP)
    form = window.editor.form
    assert form.editor("name").text() == MTP
    assert form.editor("model").text() == profile.model
    assert form.editor("max_model_len").text() == str(profile.engine().max_model_len)
    assert form.editor("image").text() == profile.docker.image
    assert not window.editor.save_button.isEnabled()  # nothing changed yet
    assert MTP in window.editor.title.text()


def test_editing_max_model_len_updates_args_in_place(window, qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    before = store.get(MTP).args
    field = window.editor.form.editor("max_model_len")
    field.selectAll()
    qtbot.keyClicks(field, "12345")
    after = window.editor.validation.profile.args
    assert get_flag(after, "max-model-len") == "12345"
    assert len(after) == len(before)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1  # only the value token moved
    assert window.editor.save_button.isEnabled()
    assert window.editor.is_dirty()
    assert window.windowTitle().startswith("• ")
    from llm_dyno.ui.widgets.profile_list import DIRTY_ROLE

    row = window.profile_list.names().index(MTP)
    assert window.profile_list.model.item(row).data(DIRTY_ROLE) is True
    # the YAML tab follows the form
    assert "12345" in window.editor.yaml.text.toPlainText()


def test_invalid_input_disables_save_with_message(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    field = window.editor.form.editor("gpu_memory_utilization")
    field.selectAll()
    qtbot.keyClicks(field, "1.5")
    hint = window.editor.form.fields["gpu_memory_utilization"].hint
    assert not hint.isHidden()
    assert "fraction between 0 and 1" in hint.text()
    assert not window.editor.save_button.isEnabled()
    field.selectAll()
    qtbot.keyClicks(field, "0.8")
    assert hint.isHidden()
    assert window.editor.save_button.isEnabled()


def test_a_flag_that_does_not_read_is_refused_under_its_field(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    # the engine-flag check lives in the Profile model: the form shows its message under the field
    _pick(window, MTP)
    field = window.editor.form.editor("max_model_len")
    field.selectAll()
    qtbot.keyClicks(field, "abc")
    hint = window.editor.form.fields["max_model_len"].hint
    assert not hint.isHidden()
    assert hint.text() == "Expected a whole number of tokens, e.g. 32768"
    assert window.editor.validation.profile is None
    assert not window.editor.save_button.isEnabled()
    field.selectAll()
    qtbot.keyClicks(field, "32k")
    assert hint.isHidden() and window.editor.save_button.isEnabled()
    assert window.editor.validation.profile.engine().max_model_len == 32000


def test_invalid_name_names_the_problem(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    field = window.editor.form.editor("name")
    field.selectAll()
    qtbot.keyClicks(field, "!bad")
    assert "name of 1-80" in window.editor.form.fields["name"].hint.text()
    assert not window.editor.save_button.isEnabled()


def test_yaml_tab_error_shows_line(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    editor = window.editor
    editor.tabs.setCurrentWidget(editor.yaml)
    text = editor.yaml.text.toPlainText().replace("model: ", "model: [unclosed", 1)
    editor.yaml.text.setPlainText(text)
    qtbot.waitUntil(lambda: "Line" in editor.yaml.status.text(), timeout=3000)
    bad_line = next(i for i, line in enumerate(text.splitlines(), start=1) if "[unclosed" in line)
    assert editor.yaml.error_line is not None
    assert abs(editor.yaml.error_line - bad_line) <= 1
    assert editor.yaml.text.extraSelections()  # the line is highlighted
    assert not editor.save_button.isEnabled()


def test_yaml_field_error_names_line_and_form_syncs(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    editor = window.editor
    text = editor.yaml.text.toPlainText()
    lines = text.splitlines()
    name_line = next(i for i, line in enumerate(lines, start=1) if line.startswith("name:"))
    lines[name_line - 1] = "name: '!nope'"
    editor.yaml.text.setPlainText("\n".join(lines) + "\n")
    qtbot.waitUntil(lambda: editor.yaml.error_line == name_line, timeout=3000)
    # a valid edit in YAML reaches the form
    lines[name_line - 1] = "name: renamed-in-yaml"
    editor.yaml.text.setPlainText("\n".join(lines) + "\n")
    qtbot.waitUntil(lambda: editor.form.editor("name").text() == "renamed-in-yaml", timeout=3000)
    assert editor.save_button.isEnabled()
    assert "Valid" in editor.yaml.status.text()


def test_save_writes_file(window, qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    field = window.editor.form.editor("max_model_len")
    field.selectAll()
    qtbot.keyClicks(field, "4096")
    qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert not window.editor.is_dirty()
    reread = ProfileStore(store.folder).get(MTP)  # from disk
    assert reread.engine().max_model_len == 4096
    assert not window.editor.save_button.isEnabled()
    assert not window.windowTitle().startswith("•")


def test_switches_and_speculative_fields(window, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    _pick(window, MTP)
    editor = window.editor
    spec = editor.form.fields["spec_json"].editor  # a long JSON shows its start, not its middle
    assert spec.text().startswith('{"method":"mtp"') and spec.cursorPosition() == 0
    tokens = editor.form.editor("spec_tokens")
    tokens.selectAll()
    QTest.keyClicks(tokens, "5")
    profile = editor.validation.profile
    assert profile.engine().num_speculative_tokens == 5
    prefix = editor.form.editor("prefix_caching")  # Default / On / Off, picked with the keyboard
    prefix.setFocus()
    while prefix.currentText() != "Off":
        QTest.keyClick(prefix, Qt.Key.Key_Down)
    assert editor.validation.profile.engine().enable_prefix_caching is False
    editor.save()
    assert ProfileStore(store.folder).get(MTP).engine().num_speculative_tokens == 5
