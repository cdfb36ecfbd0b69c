"""The Tune view names every knob one way, the way the editor and the launch plan write engine flags
(``--max-num-seqs``): the knob rows offer the names its tables, charts and messages use; the command
line's spelling (``max_num_seqs``) is still read; a refusal names the row, never ``--vary``. Driven
through the window: the sidebar, the view tabs, the knob row typed into and Run tune clicked."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.tune.knobs import parse_knob
from llm_dyno.ui.messages import speaks_cli
from tests.ui.clicks import click_profile, click_view, grab


def _type_row(view, row: int, knob: str, values: str) -> None:  # type: ignore[no-untyped-def]
    combo, edit = view.knob_combos[row], view.value_edits[row]
    combo.lineEdit().clear()
    QTest.keyClicks(combo.lineEdit(), knob)
    edit.clear()
    QTest.keyClicks(edit, values)


def test_knob_rows_offer_the_names_the_view_shows(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    click_profile(window, "cpu-demo")
    click_view(window, "Tune")
    view = window.tune_view
    for combo in view.knob_combos:
        items = [combo.itemText(i) for i in range(combo.count()) if combo.itemText(i)]
        knobs = [i for i in items if i != "env:"]
        assert knobs and all(parse_knob(k).label == k for k in knobs), knobs
        assert {"--max-num-seqs", "--max-num-batched-tokens"} <= set(knobs) and "max-num-seqs" not in knobs
        # the CPU demo uses no GPU: none of the GPU's own settings is offered, the tooltip says why
        assert not {"power", "sm_clock", "mem_clock"} & set(knobs)
        assert "sm_clock" in combo.toolTip() and "no GPU on this profile" in combo.toolTip()
        assert "-clock" not in combo.toolTip()
    recipes = view.recipe_combo
    model = recipes.model()
    for i in range(recipes.count()):
        name, tip = recipes.itemText(i), recipes.itemData(i, Qt.ItemDataRole.ToolTipRole)
        if name == "batched-tokens":
            assert tip == "Varies --max-num-batched-tokens: 2048, 4096, 8192, 16384"
        if name == "draft-depth":
            assert tip.startswith("Varies num_speculative_tokens")
        if name in ("power-cap", "clock-lock"):
            assert not model.item(i).isEnabled() and "no GPU on this profile" in tip

    # the command line's spelling is read; the refusal names the row and the knob as the view does
    _type_row(view, 0, "max_num_seqs", "0, 4")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    text = view.status.text()
    assert text == "Knob 1 (--max-num-seqs): '0' is not a positive whole number", text
    assert "--vary" not in text and "llm-dyno" not in text
    _type_row(view, 0, "--max-num-seqs", "")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert view.status.text() == "Knob 1 (--max-num-seqs): give at least one value in its Values"
    _type_row(view, 0, "", "")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert not speaks_cli(view.status.text()) and "Recipe" in view.status.text()
    assert not view.worker.running
    # no watts on a profile without a GPU: the power chart says why before any tune, not "Run a tune"
    assert (
        view.pareto_chart.empty_text
        == "no GPU on this profile (vLLM on the CPU): no watts to plot TPS against"
    )
    qtbot.wait(100)
    grab(window, "tune-knobs-cpu-demo")
