"""Load levels' figures against hand-computed ones (vllm bench serve's definitions), the options' parsing,
the JSON shape, the Pareto front and the history's storage of load runs (schema v3)."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import pytest

from llm_dyno.core.bench.load import (
    LevelResult,
    LoadError,
    LoadLevel,
    LoadResult,
    RequestRecord,
    Slo,
    level_table,
    pareto_front,
    parse_concurrency,
    parse_rates,
    parse_slo,
)
from llm_dyno.core.bench.load_runner import LoadPlan, arrival_times
from llm_dyno.core.bench.peer import PeerTimings
from llm_dyno.core.bench.run_readings import Acceptance
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.history.schema import SCHEMA_VERSION, HistoryError
from llm_dyno.core.history.store import HistoryStore


def _req(times: list[float], tokens: int, name: str = "p") -> RequestRecord:
    return RequestRecord(
        prompt=name, sent_at_s=0.0, output_tokens=tokens, prompt_tokens=10, peer=PeerTimings.of(times, tokens)
    )


# Three requests with event times (s after sending) and usage tokens; request B carries 2 tokens in
# its second event (spec decoding), C is a single token.
A = _req([0.10, 0.20, 0.30, 0.40], 4)  # TTFT .1, E2E .4, TPOT .3/3=.1, ITL .1 .1 .1
B = _req([0.50, 0.70, 0.80], 4)  # TTFT .5, E2E .8, TPOT .3/3=.1, ITL .2 .1
C = _req([0.30], 1)  # TTFT .3, E2E .3, TPOT None (0 for goodput), no ITL
LEVEL = LevelResult(
    level=LoadLevel(concurrency=2), requests=(A, B, C), duration_s=1.2, generation_tokens_delta=9
)


def test_level_figures_follow_vllm_bench_serve_definitions() -> None:
    lv = LEVEL
    assert lv.output_tokens == 9
    assert lv.output_throughput_tps == pytest.approx(9 / 1.2)
    ttft = lv.ttft()
    assert ttft is not None
    assert (ttft.mean, ttft.median) == (pytest.approx(0.3), pytest.approx(0.3))
    # numpy linear p99 of [.1, .3, .5]: .3 + (.5-.3) * 0.98
    assert ttft.p99 == pytest.approx(0.3 + 0.2 * 0.98)
    tpot = lv.tpot()
    assert tpot is not None and tpot.mean == pytest.approx(0.1) and tpot.p99 == pytest.approx(0.1)
    itl = lv.itl()  # pooled: .1 .1 .1 .2 .1 → mean .12, median .1, p99 .1 + .1 * (4*.99 - 3)
    assert itl is not None and itl.mean == pytest.approx(0.12) and itl.median == pytest.approx(0.1)
    assert itl.p99 == pytest.approx(0.1 + 0.1 * (4 * 0.99 - 3))
    e2e = lv.e2e()
    assert e2e is not None and e2e.mean == pytest.approx(1.5 / 3) and e2e.median == pytest.approx(0.4)
    assert lv.per_user_tps == pytest.approx(10.0)  # 1 / mean TPOT of A and B
    assert lv.warnings() == []


def test_goodput_counts_requests_meeting_every_slo_over_the_duration() -> None:
    assert LEVEL.goodput_rps(Slo()) is None
    # TTFT ≤ .3: A and C (C's TPOT counts as 0)
    assert LEVEL.goodput_rps(Slo(ttft_s=0.3)) == pytest.approx(2 / 1.2)
    # TPOT ≤ 50 ms: only C; TTFT ≤ 1 s and E2E ≤ .5 s: A and C
    assert LEVEL.goodput_rps(Slo(tpot_s=0.05)) == pytest.approx(1 / 1.2)
    assert LEVEL.goodput_rps(Slo(ttft_s=1.0, e2e_s=0.5)) == pytest.approx(2 / 1.2)


def test_tokens_not_accounted_for_and_failures_are_warned() -> None:
    failed = RequestRecord(
        prompt="p",
        sent_at_s=0.0,
        output_tokens=0,
        prompt_tokens=None,
        peer=None,
        error="server answered HTTP 500",
    )
    lv = LevelResult(
        level=LoadLevel(rate=2.0), requests=(A, failed), duration_s=1.0, generation_tokens_delta=7
    )
    warnings = lv.warnings()
    assert "1 of 2 requests failed" in warnings[0]
    assert "generated 7 tokens" in warnings[1] and "streamed 4" in warnings[1]


def test_options_parse_and_bad_ones_say_what() -> None:
    assert parse_slo("ttft=2s,tpot=50ms") == Slo(ttft_s=2.0, tpot_s=0.05)
    assert parse_slo("e2el=1500") == Slo(e2e_s=1.5)  # vLLM's key, bare ms
    assert parse_concurrency("1,2, 4") == (1, 2, 4)
    assert parse_rates("0.5,2") == (0.5, 2.0)
    for bad, call in (("ttft", parse_slo), ("speed=3", parse_slo), ("0,1", parse_concurrency),
                      ("a", parse_concurrency), ("-1", parse_rates), ("x", parse_rates)):  # fmt: skip
        with pytest.raises(LoadError):
            call(bad)  # type: ignore[operator]


def test_poisson_arrivals_are_seeded_and_have_the_asked_rate() -> None:
    a = arrival_times(4.0, 2000, seed=7)
    assert a == arrival_times(4.0, 2000, seed=7) and a != arrival_times(4.0, 2000, seed=8)
    assert a[0] == 0.0 and all(x < y for x, y in itertools.pairwise(a))
    assert 2000 / a[-1] == pytest.approx(4.0, rel=0.1)


def test_requests_per_level_default() -> None:
    suite = suite_from_yaml("name: s\nruns: 3\nprompts:\n  - {name: a, max_tokens: 8, messages: "
                            "[{role: user, content: hi}]}\n")  # fmt: skip
    plan = LoadPlan((LoadLevel(concurrency=8),))
    assert plan.requests_for(LoadLevel(concurrency=1), suite) == 3
    assert plan.requests_for(LoadLevel(concurrency=8), suite) == 16
    assert LoadPlan((), requests_per_level=5).requests_for(LoadLevel(concurrency=8), suite) == 5


def test_pareto_front_keeps_points_no_other_beats_on_both_axes() -> None:
    pts = [(10.0, 50.0), (18.0, 45.0), (15.0, 30.0), (30.0, 20.0), (29.0, 10.0)]
    assert pareto_front(pts) == [0, 1, 3]


def _result() -> LoadResult:
    acc = Acceptance(drafts=10, draft_tokens=30, accepted_tokens=12, per_position_accepted=(6, 4, 2))
    lv2 = LevelResult(
        level=LoadLevel(rate=1.5), requests=(A,), duration_s=0.5, generation_tokens_delta=4, acceptance=acc
    )
    return LoadResult(
        suite="s", url="http://127.0.0.1:1", model="tiny", profile="prof",
        started="2026-12-02T01:00:00+00:00", slo=Slo(ttft_s=0.3), levels=[LEVEL, lv2],
    )  # fmt: skip


def test_json_shape_and_round_trip() -> None:
    r = _result()
    d = json.loads(r.to_json())
    lv = d["levels"][0]
    assert lv["concurrency"] == 2 and "rate" not in lv and d["levels"][1]["rate"] == 1.5
    for key in ("output_throughput_tps", "per_user_tps", "goodput_rps", "acceptance", "requests",
                "output_tokens"):  # fmt: skip
        assert key in lv
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        assert set(lv[key]) == {"mean", "median", "p99"}
    assert lv["requests"] == 3 and lv["output_tokens"] == 9 and lv["goodput_rps"] == pytest.approx(2 / 1.2)
    assert lv["acceptance"] is None and d["levels"][1]["acceptance"]["rate"] == pytest.approx(0.4)
    back = LoadResult.model_validate(d)
    assert back.model_dump(mode="json") == d
    assert "concurrency 2" in level_table(back)[1]


def test_history_stores_lists_and_reads_load_runs_apart_from_benchmarks(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with HistoryStore(db) as h:
        rid = h.add_load(_result(), tags=("load",))
        entry, back = h.get_load(rid)
        assert entry.kind == "load" and back.levels[0].output_tokens == 9 and entry.tags == ("load",)
        assert h.list() == [] and [e.id for e in h.list(kind=None)] == [rid]
        with pytest.raises(HistoryError, match="load run"):
            h.get(rid)
        first = _result()
        more = first.model_copy(update={"levels": (*first.levels, LEVEL)})
        h.replace_load(rid, more)
        assert len(h.get_load(rid)[1].levels) == 3
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
