"""Issue 29, class 2: figures that cannot be true are never stored as results.

Through the real CLI in a subprocess, against a fake OpenAI server on 127.0.0.1
(tests/support/lying_server.py): a ``usage`` that claims 9,999,999 tokens for ``max_tokens`` 1000,
counters that fall during every run (a restarted server), a ``/metrics`` with ``+Inf``, ``-Inf`` and
``NaN`` samples. Each run with an impossible count is marked with its reason and left out of every
figure; a run whose counters fell has no counts (never negative ones, never a ratio of two); a
non-finite sample is no reading, in ``bench`` and in ``watch``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.support.cli import cli
from tests.support.lying_server import LyingServer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# far above any server: a TPS above it stored for a run is a figure that cannot be true
PHYSICAL_TPS_BOUND = 1_000_000


def _bench(server: LyingServer, home: Path, *extra: str) -> tuple[int, str, str, dict[str, object]]:
    out = home / "result.json"
    ran = cli(
        home, "bench", "--url", server.url, "--model", "tiny", "--runs", "2", "--warmups", "0",
        "--suite", "quick", "--json", str(out), "--no-thermal-wait", *extra,
    )  # fmt: skip
    assert "Traceback" not in ran.stderr + ran.stdout, ran.stderr[-3000:]
    return ran.returncode, ran.stdout, ran.stderr, json.loads(out.read_text())


def _runs(result: dict[str, object]) -> list[dict[str, object]]:
    return [r for p in result["prompts"] for r in p["runs"]]  # type: ignore[attr-defined, index]


def _numbers(value: object) -> list[float]:
    """Every number anywhere in a JSON value."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


def test_a_claimed_count_beyond_max_tokens_is_marked_and_left_out(tmp_path: Path) -> None:
    with LyingServer(claimed_tokens=9_999_999) as server:
        code, out, err, result = _bench(server, tmp_path, "--csv", str(tmp_path / "runs.csv"))
    runs = _runs(result)
    assert len(runs) == 4
    for run in runs:
        assert run["wall_tps"] <= PHYSICAL_TPS_BOUND and run["completion_tokens"] != 9_999_999
        assert run["decode_tps"] is None
        assert any(
            w.startswith("impossible figures: the server claims 9,999,999 completion tokens for max_tokens")
            for w in run["warnings"]  # type: ignore[attr-defined]
        ), run["warnings"]
    for prompt in result["prompts"]:  # type: ignore[attr-defined]
        summary = prompt["summary"]
        assert summary["wall_tps"] is None and summary["counted_runs"] == 0
        assert summary["excluded_runs"] == [1, 2]
        assert [r["index"] for r in summary["impossible_runs"]] == [1, 2]
        assert "a completion is never longer than its max_tokens" in summary["impossible_runs"][0]["reason"]
    assert "9,999,999 completion tokens for max_tokens 1,000" in out
    assert "2 of 2 runs left out (impossible figures)" in out
    assert code == 1 and "impossible figures" in err
    assert "3.1e" not in out and not [n for n in _numbers(result["prompts"]) if n > 9_999_998]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "runs.csv").read_text())))
    assert len(rows) == 4 and all(r["counted"] == "0" and "impossible figures" in r["warnings"] for r in rows)
    # the stored result records it too
    shown = cli(tmp_path, "history", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(shown.stdout)
    assert all(r["completion_tokens"] == 0 and r["wall_tps"] == 0 for r in _runs(stored))
    assert all(any(w.startswith("impossible figures") for w in r["warnings"]) for r in _runs(stored))


def test_a_count_beyond_what_the_stream_could_hold_is_marked_and_left_out(tmp_path: Path) -> None:
    # 700 tokens (within both prompts' max_tokens) claimed for a stream of two "ant" chunks
    with LyingServer(claimed_tokens=700, streamed_tokens=2) as server:
        code, out, _err, result = _bench(server, tmp_path)
    assert code == 1
    for run in _runs(result):
        assert run["completion_tokens"] == 0 and run["decode_tps"] is None
        claim = "impossible figures: the server claims 700 completion tokens but streamed 6 characters"
        assert f"{claim} in 3 events" in run["warnings"][0]  # type: ignore[index]
    assert "4 of 4 measured runs had impossible figures" in out + _err


@pytest.mark.parametrize("recorded", ["chat_length.sse", "chat_special_tokens_only.sse"])
def test_recorded_vllm_streams_are_possible(recorded: str, tmp_path: Path) -> None:
    # real streams: 4 tokens a chunk (spec decoding), and 24 special tokens with no text at all
    with LyingServer(replay=FIXTURES / "sse" / recorded) as server:
        code, _out, err, result = _bench(server, tmp_path)
    assert code == 0, err
    runs = _runs(result)
    assert len(runs) == 4 and all(r["completion_tokens"] == 24 for r in runs)
    assert not [w for r in runs for w in r["warnings"] if w.startswith("impossible")]  # type: ignore[attr-defined]


def test_counters_that_fall_during_a_run_give_no_counts_never_negative_ones(tmp_path: Path) -> None:
    with LyingServer(metrics="falling") as server:
        code, out, err, result = _bench(server, tmp_path)
    assert code == 0, err
    runs = _runs(result)
    assert len(runs) == 4
    for run in runs:
        assert run["acceptance"] is None, run["acceptance"]
        assert run["generation_tokens_delta"] is None
        assert run["completion_tokens"] in (1000, 800)
        assert any("counters fell during the run" in w for w in run["warnings"])  # type: ignore[attr-defined]
    for prompt in result["prompts"]:  # type: ignore[attr-defined]
        assert prompt["summary"]["acceptance"] is None
        assert prompt["summary"]["counted_runs"] == 2
    assert not [n for n in _numbers(result["prompts"]) if n < 0]
    assert "accept" not in out.replace("acceptance counts are not known", "")
    assert "counters fell during the run (it restarted?)" in out


def test_non_finite_samples_are_no_readings_in_bench(tmp_path: Path) -> None:
    with LyingServer(metrics="inf") as server:
        code, _out, err, result = _bench(server, tmp_path)
    assert code == 0, err
    runs = _runs(result)
    assert len(runs) == 4
    for run in runs:
        assert run["generation_tokens_delta"] is None and run["acceptance"] is None
        assert run["completion_tokens"] in (1000, 800)
    text = json.dumps(result)
    assert "Infinity" not in text and "NaN" not in text


def test_non_finite_samples_are_no_readings_in_watch(tmp_path: Path) -> None:
    with LyingServer(metrics="inf") as server:
        ran = cli(tmp_path, "watch", "--url", server.url, "--interval", "0.3", "--count", "3")
        as_json = cli(tmp_path, "watch", "--url", server.url, "--interval", "0.3", "--count", "3", "--json")
    assert ran.returncode == 0 and as_json.returncode == 0, ran.stderr + as_json.stderr
    assert "Traceback" not in ran.stderr + as_json.stderr
    lines = ran.stdout.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert "inf" not in line.lower().replace("info", "") and "nan" not in line.lower(), line
    for line in as_json.stdout.splitlines():
        sample = json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        snap = sample["snapshot"]
        assert snap["generation_tokens"] is None and snap["running"] is None
        assert snap["spec_drafts"] is None and snap["kv_cache_usage"] is None
        assert snap["spec_draft_tokens"] == 138.0  # the finite series are still read


def test_a_claimed_count_beyond_max_tokens_fails_the_request_under_load(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    with LyingServer(claimed_tokens=9_999_999) as server:
        ran = cli(
            tmp_path, "bench", "--url", server.url, "--model", "tiny", "--suite", "quick",
            "--concurrency", "2", "--requests", "4", "--json", str(out),
        )  # fmt: skip
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
    assert ran.returncode == 1
    assert "every request failed (first: impossible figures: the server claims 9,999,999" in ran.stderr
    assert "4 of 4 requests failed" in ran.stdout
    assert not [n for n in _numbers(json.loads(out.read_text())) if n >= 9_999_999]


def test_a_stored_acceptance_from_two_negatives_reads_as_none() -> None:
    # what a result stored before the reset rule held: deltas across a restart
    from llm_dyno.core.bench.run_readings import Acceptance, sum_acceptance

    stored = Acceptance.model_validate({"drafts": -600, "draft_tokens": -1800, "accepted_tokens": -360})
    assert stored.rate is None and stored.mean_length is None and stored.per_position == ()
    assert stored.contradiction == "a negative count (-1,800)"
    good = Acceptance(drafts=46, draft_tokens=138, accepted_tokens=136, per_position_accepted=(46, 45, 45))
    assert sum_acceptance([stored, good]) == good
    assert (
        Acceptance(drafts=10, draft_tokens=30, accepted_tokens=31).rate is None
    )  # more accepted than drafted


def test_a_per_request_acceptance_that_cannot_be_true_is_not_stored(tmp_path: Path) -> None:
    # vLLM's per-request figure (--per-request-spec-decode-metrics) with more accepted than drafted
    # and 3 steps, a rate of 500 %, a mean length of 1e308 and a negative histogram bin
    spec = {
        "mean_acceptance_length": 1e308, "draft_acceptance_rate": 5.0, "num_spec_steps": 10,
        "num_accepted_draft_tokens": 90, "num_draft_tokens": 30, "num_spec_tokens": 3,
        "acceptance_histogram": [1, 2, -3, 4],
    }  # fmt: skip
    with LyingServer(request_acceptance=spec) as server:
        code, out, err, result = _bench(server, tmp_path)
    assert code == 0, err
    assert all(r["request_acceptance"] is None for r in _runs(result))
    assert all(p["summary"]["request_acceptance"] is None for p in result["prompts"])  # type: ignore[attr-defined]
    assert "request: accept" not in out
