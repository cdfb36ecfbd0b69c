"""Adding a result export format is one registry entry plus its writer (docs/guide.md "Extending"): the
guide's TSV example, registered at runtime, is offered by the CLI (``export bench --format``, ``bench
--tsv FILE``) and by the history's Export menu, and both write its text."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog

from llm_dyno.cli import build_parser
from llm_dyno.cli import run as run_cli
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.exports.registry import RESULT_EXPORTS, ResultExport, ResultKind
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.ui.bench.bench_view import BenchmarkView
from tests.support.result_files import recorded


def _bench_tsv(result: BenchResult) -> str:  # the guide's example, as written there
    rows = [("prompt", "run", "wall_tps")] + [(r.prompt, r.index, r.wall_tps) for r in result.all_runs()]
    return "\n".join("\t".join(str(c) for c in row) for row in rows) + "\n"


@pytest.fixture
def tsv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> BenchResult:
    monkeypatch.setitem(RESULT_EXPORTS, "tsv", ResultExport("TSV", ".tsv", {ResultKind.BENCH: _bench_tsv}))
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LLM_DYNO_DATA", raising=False)
    result = recorded("cpu-tiny-ngram")
    with HistoryStore() as store:
        store.add(result)
    return result


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_registered_format_reaches_the_cli(tsv: BenchResult, tmp_path: Path) -> None:
    out = tmp_path / "r.tsv"
    assert run_cli(["export", "bench", "1", "--format", "tsv", "--out", str(out)]) == 0
    rows = _rows(out)
    assert rows[0] == ["prompt", "run", "wall_tps"] and len(rows) == len(tsv.all_runs()) + 1
    bench = build_parser().parse_args(["bench", "--url", "http://127.0.0.1:1", "--tsv", str(out)])
    assert bench.export_tsv == str(out)
    tune = build_parser().parse_args(["tune", "x", "--json", "t.json"])  # a bench-only format: no --tsv
    assert not hasattr(tune, "export_tsv")


def test_a_registered_format_reaches_the_window(  # type: ignore[no-untyped-def]
    qtbot, tsv: BenchResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "w.tsv"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *_a: (str(out), "")))
    view = BenchmarkView()
    qtbot.addWidget(view)
    view.history.select_ids([view.history.entries[0].id])
    assert "TSV…" in [a.text() for a in view.history.export_button.menu().actions()]
    view.history.export_actions["tsv"].trigger()
    assert _rows(out)[1][0] == tsv.all_runs()[0].prompt and len(_rows(out)) == len(tsv.all_runs()) + 1
