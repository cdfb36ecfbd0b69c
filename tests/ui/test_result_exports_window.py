"""Result exports from the window: the history's, the Tune view's and the dashboard's export menus list
exactly the registry's formats for their kind (plus the chart image), and each menu entry writes a file
that parses back (JSON, CSV, Markdown) and holds what is shown. The save dialog is answered by the test."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QPushButton

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.exports.registry import ResultKind, formats_for
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.rates import MetricsRates
from llm_dyno.ui.bench.bench_view import BenchmarkView
from llm_dyno.ui.dashboard import Dashboard
from llm_dyno.ui.tune.tune_view import TuneView
from tests.support.result_files import parse_back, recorded, tune_record

T0 = 1_800_000_000.0


class SaveAnswers:
    """Stands in for the user at the save dialog: answers each question with the next file of a folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.asked: list[tuple[str, str]] = []

    def __call__(self, _parent: object, _caption: str, suggested: str, filters: str = "") -> tuple[str, str]:
        self.asked.append((suggested, filters))
        return str(self.folder / f"{len(self.asked)}-{Path(suggested).name}"), filters

    def last(self) -> Path:
        return self.folder / f"{len(self.asked)}-{Path(self.asked[-1][0]).name}"


@pytest.fixture
def answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SaveAnswers:
    out = SaveAnswers(tmp_path)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(out))
    return out


def menu_names(button: QPushButton) -> list[str]:
    return [a.text() for a in button.menu().actions()]


def check_entries(actions: dict, kind: ResultKind, chart: bool) -> None:  # type: ignore[type-arg]
    want = list(formats_for(kind)) + (["png"] if chart else [])
    assert list(actions) == want


def test_history_menu_offers_every_bench_format(qtbot, ui_home: Path, answers: SaveAnswers) -> None:  # type: ignore[no-untyped-def]
    result = recorded("cpu-tiny")
    with HistoryStore() as store:
        store.add(result)
    view = BenchmarkView()
    qtbot.addWidget(view)
    history = view.history
    history.select_ids([history.entries[0].id])
    check_entries(history.export_actions, ResultKind.BENCH, chart=True)
    assert menu_names(history.export_button) == [
        *(f"{f.title}…" for f in formats_for(ResultKind.BENCH).values()),
        "Chart as PNG…",
    ]
    for name, fmt in formats_for(ResultKind.BENCH).items():
        history.export_actions[name].trigger()
        path = answers.last()
        assert path.suffix == fmt.suffix and fmt.file_filter() == answers.asked[-1][1]
        back = parse_back(path)
        if name == "json":
            assert BenchResult.from_dict(back).suite == result.suite
        elif name == "csv":
            assert len(back) == len(result.all_runs())
        elif name == "markdown":
            assert [r["prompt"] for r in back[0]] == [p.name for p in result.prompts]


def test_tune_menu_offers_every_tune_format(qtbot, ui_home: Path, answers: SaveAnswers) -> None:  # type: ignore[no-untyped-def]
    record = tune_record()
    view = TuneView()
    qtbot.addWidget(view)
    assert not view.export_button.isEnabled()  # nothing to export before a tune is shown
    view.show_record(record)
    assert view.export_button.isEnabled()
    check_entries(view.export_actions, ResultKind.TUNE, chart=True)
    for name, fmt in formats_for(ResultKind.TUNE).items():
        view.export_actions[name].trigger()
        path = answers.last()
        assert path.suffix == fmt.suffix
        back = parse_back(path)
        if name == "json":
            assert back["id"] == record.tune_id and len(back["analysis"]["trials"]) == 2
        elif name == "csv":
            assert [r["trial"] for r in back] == [t.label for t in record.trials]
        elif name == "markdown":
            assert len(back[0]) == 2
        elif name == "post":
            assert path.read_text(encoding="utf-8").startswith("cpu-tiny · tune power=230,290")


def _sample(gen: float) -> MetricsSample:
    snap = MetricsSnapshot(taken_at=0.0, running=1, waiting=0, kv_cache_usage=0.5)
    rates = MetricsRates(interval_s=1.0, generation_tps=gen, prompt_tps=gen / 2)
    return MetricsSample(0.0, "http://x/metrics", snap, rates)


def test_dashboard_menu_offers_every_dashboard_format(dash: Dashboard, answers: SaveAnswers) -> None:
    for i in range(120):
        dash.feed_metrics(_sample(100.0 + i), t=T0 + i)
    dash.set_window("1 min")
    check_entries(dash.export_actions, ResultKind.DASHBOARD, chart=False)
    for name, fmt in formats_for(ResultKind.DASHBOARD).items():
        dash.export_actions[name].trigger()
        path = answers.last()
        assert path.suffix == fmt.suffix
        back = parse_back(path)
        rows = back["rows"] if name == "json" else back
        assert 59 <= len(rows) <= 62
        assert float(rows[-1]["gen_tps"]) == pytest.approx(219.0)
        assert float(rows[-1]["unix_s"]) == pytest.approx(T0 + 119)
