"""Issue 28 in the window: the Diagnostics view takes a post's own figures typed (acceptance per
position, power cap) and shows the split and the ranked causes from them, no log. The case: a 230 W cap
against the founding post's 330 W numbers, equal acceptance: the power cap is the first cause, sized."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.diagnose.gather import remembered_typed
from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from tests.ui.diagnostics_window import save_shot

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def view(diagnostics) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    return diagnostics("qwen36-27b-mtp", "founding-post-3090-330w")


def test_typed_acceptance_and_cap_give_the_split_and_rank_the_cap_first(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    view.narr_box.setValue(33.0)
    view.code_box.setValue(40.0)
    view.power_box.setValue(230)
    view.show()
    qtbot.waitExposed(view)
    qtbot.mouseClick(view.acceptance_edit, Qt.MouseButton.LeftButton)
    QTest.keyClicks(view.acceptance_edit, "93,86.6,73.9")
    QTest.keyClick(view.acceptance_edit, Qt.Key.Key_Return)  # editingFinished: remembered for the profile
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.refresh()
    text = view.split_label.text()
    assert "The gap is in time per pass, not acceptance" in text
    rows = view.causes.texts()
    assert rows[0][1] == "Power cap" and rows[0][0] == "likely"
    assert "33 → 43" in rows[0][2] and "the cap explains the gap" in rows[0][2]
    assert "typed TPS, acceptance 3 positions, power cap 230 W" in view.sources.text()
    remembered = remembered_typed("qwen36-27b-mtp")
    assert remembered is not None and remembered.acceptance_per_position == (0.93, 0.866, 0.739)
    assert remembered.power_cap_w == 230
    save_shot(qtbot, view, "diagnostics-typed-power-cap.png", view.causes)


def test_unreadable_acceptance_is_not_used_and_says_why(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    view.acceptance_edit.setText("93,abc")
    assert view.typed_acceptance() == ()
    assert "'abc' is not a number" in view.acceptance_edit.toolTip()


def test_the_questions_tab_answers_from_the_typed_figures(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    view.narr_box.setValue(43.0)
    view.code_box.setValue(54.0)
    view.acceptance_edit.setText("93,86.6,73.9")
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.reference_combo.setCurrentIndex(view.reference_combo.findData("recipe-3090-claimed"))
    rows = {r[0]: r for r in view.questions.texts()}
    drafted = rows["What drafted throughput should I expect?"]
    assert drafted[1].endswith("time per pass is the bottleneck")
    assert "3 × 43 / 3.54 = 36.5 tok/s" in drafted[2]  # 1 + 0.93 + 0.866 + 0.739 = 3.535 tokens per pass
    assert rows["Does the torch.compile cache matter once warm?"][1] == "no: start-up time only"
    save_shot(qtbot, view, "diagnostics-questions.png", view.questions)
