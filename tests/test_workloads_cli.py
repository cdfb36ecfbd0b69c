"""Workload suites (issue #32) through ``llm-dyno bench`` in a subprocess, against a loopback server that
answers with the recorded real vLLM stream and counts a prefix cache as vLLM does
(tests/support/workload_server.py): the per-turn arithmetic, the prefix counters, cold and warm, the
context limit, reasoning timings, and the report stored in the history with the suite's definition."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import cli
from tests.support.workload_server import BLOCK, WorkloadServer

SUITES = Path(__file__).resolve().parents[1] / "resources" / "suites"


def _suite(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _bench(home: Path, url: str, suite: str, *extra: str) -> Any:
    done = cli(home, "bench", "--url", url, "--model", "tiny", "--suite", suite, *extra, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = cli(home, "history", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    return done.stdout, json.loads(shown.stdout)


MULTI = """
name: chat-test
kind: multi-turn
warmups: 1
runs: 1
workload:
  turns: {turns}
prompts:
  - name: open
    max_tokens: 24
    messages:
      - role: system
        content: {system}
      - role: user
        content: first question about the notes service and its parts
  - name: next
    max_tokens: 24
    messages:
      - role: user
        content: a second question that asks about storage and its trade offs
"""


@pytest.mark.parametrize("usage_details", [False, True])
def test_multi_turn_carries_the_history_and_counts_cached_tokens(tmp_path: Path, usage_details: bool) -> None:
    system = " ".join(f"rule{i}" for i in range(40))
    suite = _suite(tmp_path, "chat", MULTI.format(turns=4, system=system))
    steps_file = tmp_path / "steps.csv"
    with WorkloadServer(usage_details=usage_details) as server:
        out, stored = _bench(tmp_path / "home", server.url, str(suite), "--steps-csv", str(steps_file))
        seen = server.requests
    report = stored["context"]["workload"]
    steps = report["steps"]
    assert [s["label"] for s in steps] == ["turn 1", "turn 2", "turn 3", "turn 4"]
    measured = seen[1:]  # the first request was the warm-up
    # every turn's prompt is longer than the one before: the whole history rides along
    assert [s["context_tokens"] for s in steps] == [r["prompt_tokens"] for r in measured]
    lengths = [s["context_tokens"] for s in steps]
    assert all(b > a for a, b in itertools.pairwise(lengths))
    # turn 1 is salted (nothing from the warm-up is reused); later turns reuse the whole blocks before them
    assert steps[0]["cached_tokens"] == 0
    for earlier, step, counted in zip(steps, steps[1:], measured[1:], strict=False):
        assert step["cached_tokens"] == counted["cached_tokens"]
        assert step["cached_tokens"] >= (earlier["context_tokens"] // BLOCK) * BLOCK
        assert step["prefix_queries"] == step["context_tokens"]
    assert {s["cached_from"] for s in steps[1:]} == {"usage" if usage_details else "counters"}
    assert all(s["decode_tps"] is None or s["decode_tps"] > 0 for s in steps)
    assert stored["context"]["suite_definition"]["kind"] == "multi-turn"
    assert "turn 4" in out and "cached" in out
    rows = list(csv.DictReader(steps_file.open(encoding="utf-8")))
    assert [(r["kind"], r["label"], int(r["cached_tokens"])) for r in rows] == [
        ("multi-turn", s["label"], s["cached_tokens"]) for s in steps
    ]


def test_multi_turn_stops_before_the_context_limit(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "chat", MULTI.format(turns=30, system="short system prompt"))
    with WorkloadServer(max_model_len=160) as server:
        out, stored = _bench(tmp_path / "home", server.url, str(suite))
        largest = max(r["prompt_tokens"] for r in server.requests)
    report = stored["context"]["workload"]
    assert 1 < len(report["steps"]) < 30
    assert largest + 24 <= 160  # no request was sent that could not fit
    assert report["max_model_len"] == 160 and "past the server's max-model-len 160" in report["skipped"][0]
    assert "skipped:" in out


SHARED = """
name: prefix-test
kind: shared-prefix
warmups: 0
runs: 2
workload:
  requests: 4
  prefix_repeat: 20
  prefix: "the team writes python services with tests and reviews "
prompts:
  - name: q1
    max_tokens: 24
    messages:
      - role: user
        content: where do I look first
  - name: q2
    max_tokens: 24
    messages:
      - role: user
        content: how would you add tags
"""


@pytest.mark.parametrize("dev_mode", [True, False])
def test_shared_prefix_cold_then_warm(tmp_path: Path, dev_mode: bool) -> None:
    suite = _suite(tmp_path, "prefix", SHARED)
    with WorkloadServer(dev_mode=dev_mode) as server:
        out, stored = _bench(tmp_path / "home", server.url, str(suite))
        resets, seen = server.resets, server.requests
    report = stored["context"]["workload"]
    assert report["cold_method"] == ("reset" if dev_mode else "salt")
    assert resets == (2 if dev_mode else 0)
    steps = report["steps"]
    assert [s["label"].split()[0] for s in steps] == ["cold", "warm", "warm", "warm"] * 2
    for step, counted in zip(steps, seen, strict=False):
        assert step["prefix_hits"] == counted["cached_tokens"]
    for repeat in (1, 2):
        cold, *warm = [s for s in steps if s["repeat"] == repeat]
        assert cold["prefix_hits"] < BLOCK  # cold: at most the template's first block, never the prefix
        assert all(w["prefix_hits"] >= 160 for w in warm)  # the 160-word prefix is read from the cache
    hits = sum(s["prefix_hits"] for s in steps)
    queries = sum(s["prefix_queries"] for s in steps)
    assert f"hit rate {hits / queries * 100:.1f}%" in out
    names = [p["name"] for p in stored["prompts"]]
    assert names == ["cold", "warm"]


SWEEP = """
name: sweep-test
kind: context-sweep
warmups: 1
runs: 2
workload:
  contexts: [64, 256, 1024, 100000]
prompts:
  - name: summary
    max_tokens: 24
    messages:
      - role: user
        content: summarise the text above
"""


def test_context_sweep_reaches_each_length_and_skips_past_the_limit(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "sweep", SWEEP)
    with WorkloadServer(max_model_len=2048) as server:
        out, stored = _bench(tmp_path / "home", server.url, str(suite))
        sent = [r["prompt_tokens"] for r in server.requests]
    report = stored["context"]["workload"]
    steps = report["steps"]
    assert [s["target_tokens"] for s in steps] == [64, 64, 256, 256, 1024, 1024]
    for s in steps:  # the calibration makes each prompt its length, within one filler copy
        assert abs(s["context_tokens"] - s["target_tokens"]) <= 17
        assert s["cached_tokens"] < BLOCK  # salted: every run prefills its whole context
    assert "100,000 tokens" in report["skipped"][0]
    assert max(sent) < 2048
    assert [p["name"] for p in stored["prompts"]] == ["calibration", "ctx 64", "ctx 256", "ctx 1024"]
    assert "skipped: 100,000 tokens" in out
    # the two calibration requests are counted as their own warm-ups, each length's as the suite's
    assert "calibration warm-up 2/2" in out and "ctx 64     warm-up 1/1" in out


def test_reasoning_first_tokens_and_counts(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "chat", MULTI.format(turns=2, system="be brief"))
    with WorkloadServer(reasoning=True) as server:
        out, stored = _bench(tmp_path / "home", server.url, str(suite))
    for step in stored["context"]["workload"]["steps"]:
        assert step["first_reasoning_s"] is not None and step["first_content_s"] is not None
        assert step["first_reasoning_s"] <= step["first_content_s"]
        assert step["reasoning_tokens"] + step["content_tokens"] == step["completion_tokens"]
        assert step["reasoning_tokens"] > 0
    assert "reasoning first" in out


def test_a_standard_suite_keeps_reasoning_times_where_ttft_is(tmp_path: Path) -> None:
    plain = _suite(tmp_path, "plain", MULTI.format(turns=1, system="be brief").replace("kind: multi-turn", "")
                   .replace("workload:\n  turns: 1\n", ""))  # fmt: skip
    with WorkloadServer(reasoning=True) as server:
        out, stored = _bench(tmp_path / "home", server.url, str(plain))
    runs = [r for p in stored["prompts"] for r in p["runs"]]
    assert len(runs) == 4  # two prompts, a warm-up and a run each
    for run in runs:
        times = run["reasoning"]
        assert run["ttft_s"] == times["first_reasoning_s"] <= times["first_content_s"]
        assert times["reasoning_tokens"] + times["content_tokens"] == run["completion_tokens"]
    assert out.count("content first") == 4
    with WorkloadServer() as server:  # no reasoning: the run's JSON is as before, without the key
        _, stored = _bench(tmp_path / "home2", server.url, str(plain))
    assert all("reasoning" not in r for p in stored["prompts"] for r in p["runs"])


def test_shipped_suites_and_standard_suites_unchanged(tmp_path: Path) -> None:
    for name in ("multi-turn", "shared-prefix", "context-sweep"):
        assert (SUITES / f"{name}.yaml").is_file()
    bad = _suite(tmp_path, "bad", SWEEP.replace("contexts: [64, 256, 1024, 100000]", "contexts: [64, -1]"))
    done = cli(tmp_path / "home", "bench", "--url", "http://127.0.0.1:9", "--model", "t", "--suite", str(bad))
    assert done.returncode != 0 and "contexts" in done.stderr and "bad.yaml" in done.stderr


def test_a_workload_suite_is_refused_as_a_load(tmp_path: Path) -> None:
    with WorkloadServer() as server:
        done = cli(tmp_path / "home", "bench", "--url", server.url, "--model", "tiny", "--suite",
                   "multi-turn", "--concurrency", "2")  # fmt: skip
        sent = len(server.requests)
    assert done.returncode != 0 and "multi-turn workload" in done.stderr
    assert sent == 0
