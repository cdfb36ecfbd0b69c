"""The Diagnostics view as the Diagnostics tests open it: a shipped profile saved in the test's home,
selected, and compared with a reference, each step waited for (the ``diagnostics`` fixture)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication, QWidget

from llm_dyno.core.profiles.model import profile_from_yaml
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.ui import theme
from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from llm_dyno.ui.session import ProfileSession

REPO = Path(__file__).resolve().parents[2]
WAIT_MS = 15000


def open_diagnostics(qtbot: Any, profile: str, reference_id: str | None) -> DiagnosticsView:
    """The view on ``profiles/<profile>.yaml`` (stored in the current LLM_DYNO_HOME) compared with
    ``reference_id`` (None: the one the view picks)."""
    path = REPO / "profiles" / f"{profile}.yaml"
    store = ProfileStore()
    stored = profile_from_yaml(path.read_text(encoding="utf-8"), str(path))
    store.save(stored)
    session = ProfileSession(store)
    session.reload()
    view = DiagnosticsView(session)
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.diagnosed, timeout=WAIT_MS):
        view.set_target(session.get(stored.name), None)
    if reference_id is not None:
        index = view.reference_combo.findData(reference_id)
        assert index >= 0, f"no reference {reference_id!r} in the view's list"
        if index == view.reference_combo.currentIndex():
            return view  # already the one compared with: no second diagnosis
        with qtbot.waitSignal(view.diagnosed, timeout=WAIT_MS):
            view.reference_combo.setCurrentIndex(index)
    return view


def save_shot(qtbot: Any, widget: QWidget, name: str, tab: QWidget | None = None) -> Path | None:
    """With ``LLM_DYNO_SHOTS`` set (a folder, e.g. docs/screenshots), save the widget as ``name``, in
    the light theme at the size the docs show (a view 1400 x 900; a dialog at its own size), with
    ``tab`` of the view's tabs shown; None when not asked for."""
    shots = os.environ.get("LLM_DYNO_SHOTS")
    if not shots:
        return None
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    if isinstance(widget, DiagnosticsView):
        widget.resize(1400, 900)
        if tab is not None:
            widget.tabs.setCurrentWidget(tab)
    widget.show()
    qtbot.waitExposed(widget)
    qtbot.wait(200)  # laid out and painted in the theme
    path = Path(shots) / name
    assert widget.grab().save(str(path)), path
    return path
