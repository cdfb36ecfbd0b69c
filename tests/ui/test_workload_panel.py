"""The Benchmark view runs a workload suite picked in its suite list and shows its steps in the Workload
tab (table and plot), live and when opened from the history; the server is the loopback one with a
prefix cache answering the recorded vLLM stream (tests/support/workload_server.py)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.bench.suite import user_suites_dir
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.ui.bench.bench_view import BenchmarkView
from tests.support.workload_server import WorkloadServer

SUITE = """
name: chat-window
kind: multi-turn
warmups: 0
runs: 1
workload:
  turns: 3
prompts:
  - name: open
    max_tokens: 24
    messages:
      - role: user
        content: first question about the notes service and all of its many parts and pieces
"""


def test_a_multi_turn_suite_runs_from_the_window_and_its_turns_show(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    user_suites_dir().mkdir(parents=True, exist_ok=True)
    (user_suites_dir() / "chat-window.yaml").write_text(SUITE, encoding="utf-8")
    v = BenchmarkView()
    qtbot.addWidget(v)
    v.reload_suites()
    v.suite_combo.setCurrentText("chat-window")
    assert v.suite_combo.currentText() == "chat-window"
    assert v.workload.table.rowCount() == 0 and "No workload" in v.workload.summary.text()
    with WorkloadServer(reasoning=True) as server:
        v.url_edit.setText(server.url)
        v.model_edit.setText("tiny")
        with qtbot.waitSignal(v.benchmark_finished, timeout=60000) as done:
            QTest.mouseClick(v.run_button, Qt.MouseButton.LeftButton)
        seen = server.requests
    assert "done" in done.args[0]
    table = v.workload.table
    assert table.rowCount() == 3
    assert [table.item(r, 0).text() for r in range(3)] == ["turn 1", "turn 2", "turn 3"]
    assert [int(table.item(r, 1).text()) for r in range(3)] == [r["prompt_tokens"] for r in seen]
    assert [int(table.item(r, 2).text()) for r in range(3)] == [r["cached_tokens"] for r in seen]
    assert table.item(0, 7).text() != "—"  # the first reasoning token's time
    xs, _ = v.workload.chart.ttft_curves[0].getData()
    assert list(xs) == [float(r["prompt_tokens"]) for r in seen]
    assert "max-model-len 4,096" in v.workload.summary.text()

    v.workload.show_result(None)
    assert v.workload.table.rowCount() == 0
    with HistoryStore() as store:
        rid = store.list()[0].id
    v.open_result(rid)
    assert v.workload.table.rowCount() == 3 and v.workload.report is not None


SWEEP = """
name: sweep-window
kind: context-sweep
warmups: 0
runs: 1
workload:
  contexts: [64, 512]
prompts:
  - name: summary
    max_tokens: 24
    messages:
      - role: user
        content: summarise the text above
"""


def test_two_stored_context_sweeps_are_drawn_together(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.core.bench.suite import suite_from_yaml

    v = BenchmarkView()
    qtbot.addWidget(v)
    for _ in range(2):  # two servers, as two profiles would be
        with WorkloadServer() as server:
            v.url_edit.setText(server.url)
            v.model_edit.setText("tiny")
            with qtbot.waitSignal(v.benchmark_finished, timeout=60000):
                assert v.start(suite_from_yaml(SWEEP))
    with HistoryStore() as store:
        ids = [e.id for e in store.list()]
    assert len(ids) == 2
    v.compare_ids(ids)
    curves = v.workload.chart.ttft_curves
    assert len(curves) == 2
    for curve in curves:
        xs, _ = curve.getData()
        assert len(xs) == 2 and abs(xs[0] - 64) <= 17 and abs(xs[1] - 512) <= 17
    assert v.workload.summary.text().startswith("comparing 2 workloads")
