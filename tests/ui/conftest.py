"""GUI tests run offscreen with a temporary LLM_DYNO_HOME; no modal dialog ever blocks."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before anything imports Qt

from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.ui.dashboard import Dashboard


@pytest.fixture
def ui_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``LLM_DYNO_HOME`` for one test."""
    home = tmp_path / "home"
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    return home


@pytest.fixture
def store(ui_home: Path) -> ProfileStore:
    """The store in the temp home, with the shipped example profiles installed."""
    s = ProfileStore()
    s.install_shipped()
    return s


@pytest.fixture
def demo(store: ProfileStore, tmp_path: Path) -> ProfileStore:
    """The store with the CPU demo's model folder in place, as its setup leaves it (no weights needed)."""
    model = tmp_path / "models" / "tiny-qwen2"
    model.mkdir(parents=True)
    store.save(store.get("cpu-demo").model_copy(update={"model": str(model)}))
    return store


@pytest.fixture
def window(qtbot, store: ProfileStore) -> Iterator:  # type: ignore[no-untyped-def]
    """The main window over the temp store, non-interactive (no modal questions)."""
    from PySide6.QtWidgets import QApplication

    from llm_dyno.ui import theme
    from llm_dyno.ui.main_window import MainWindow

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    yield w
    w.editor.set_profile(None)  # nothing unsaved: close without asking


@pytest.fixture
def dash(qtbot) -> Iterator[Dashboard]:  # type: ignore[no-untyped-def]
    """A shown dashboard, its samplers stopped afterwards."""
    d = Dashboard()
    qtbot.addWidget(d)
    d.resize(1100, 760)
    d.show()
    yield d
    d.stop_watching()


@pytest.fixture
def diagnostics(qtbot, ui_home: Path):  # type: ignore[no-untyped-def]
    """Opens the Diagnostics view on a shipped profile and a reference: ``diagnostics("cpu-demo",
    "recipe-3090-claimed")`` (tests/ui/diagnostics_window.py)."""
    from tests.ui.diagnostics_window import open_diagnostics

    return lambda profile, reference_id: open_diagnostics(qtbot, profile, reference_id)
