"""The editor's Host placeholder says where a profile with no --host really listens, per runtime
(issue 29, class 11): a process is given 127.0.0.1; a container's vLLM binds 0.0.0.0 inside it and the
app publishes its port on 127.0.0.1."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox, QLineEdit

from llm_dyno.core.profiles.store import ProfileStore


def _host(window) -> QLineEdit:  # type: ignore[no-untyped-def]
    edit = window.editor.form.editor("host")
    assert isinstance(edit, QLineEdit)
    return edit


def test_host_placeholder_follows_the_runtime(window, qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    assert store.get("cpu-demo").runtime.value == "process"
    window.select_profile("cpu-demo")
    placeholder = _host(window).placeholderText()
    assert "127.0.0.1" in placeholder
    assert "0.0.0.0" not in placeholder  # noqa: S104 - the process runtime never binds every interface by default

    window.select_profile("qwen36-27b-mtp")
    assert "0.0.0.0 in the container" in _host(window).placeholderText()
    assert "127.0.0.1" in _host(window).placeholderText()

    # switching the runtime in the form (keyboard, as a user does) changes the placeholder at once
    runtime = window.editor.form.editor("runtime")
    assert isinstance(runtime, QComboBox)
    runtime.setFocus()
    QTest.keyClick(runtime, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: runtime.currentData() == "process", timeout=3000)
    qtbot.waitUntil(lambda: _host(window).placeholderText().startswith("127.0.0.1"), timeout=3000)
