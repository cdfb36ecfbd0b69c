"""Shared prefix: M requests over one long common prefix (a system prompt, a code base) and each its
own question, as an agent's or a RAG app's requests share theirs. The first request meets the prefix
cold and the others warm: TTFT of each, and the prefix-cache hit rate from the server's counters.

Each repeat (the suite's ``runs``) starts cold: the server's prefix cache is emptied with
``POST /reset_prefix_cache`` where the server answers it (vLLM with ``VLLM_SERVER_DEV_MODE=1``), else
the prefix gets a random salt at its start, new each repeat; the report says which.

Settings (the suite's ``workload:``): ``prefix`` (the text), ``prefix_repeat`` (how many times it is
repeated to make it long, default 1), ``requests`` (M, default 8). The questions are the suite's
prompts' user messages in turn.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from llm_dyno.core.bench.suite import Message, SuitePrompt
from llm_dyno.core.bench.workloads.common import (
    DEFAULT_REQUESTS,
    save,
    server_limit,
    setting,
    step_of,
    warm_up,
)
from llm_dyno.core.bench.workloads.records import WorkloadReport
from llm_dyno.core.httpbounds import BoundsError, read_body, send_bounded

if TYPE_CHECKING:
    from llm_dyno.core.bench.workloads.protocol import WorkloadRunner

RESET_PATH = "/reset_prefix_cache"
RESET = "reset"
SALT = "salt"


def reset_cache(runner: WorkloadRunner) -> bool:
    """POST /reset_prefix_cache; whether the server answered it with success (a server without the dev
    routes answers 404; one that does not answer within 10 s is taken as not having them)."""
    import httpx

    http = runner.client.http
    try:
        response = send_bounded(http, http.build_request("POST", RESET_PATH), url=RESET_PATH, deadline_s=10.0)
        try:
            read_body(response, RESET_PATH, limit=64 * 1024, deadline_s=10.0, what="reset answer")
        finally:
            response.close()
    except (httpx.HTTPError, BoundsError):
        return False
    return response.status_code < 300


def run(runner: WorkloadRunner) -> None:
    """Run the repeats into ``runner.result`` (see the module docstring)."""
    requests = int(setting(runner, "requests", DEFAULT_REQUESTS))
    prefix = str(setting(runner, "prefix", "")) * int(setting(runner, "prefix_repeat", 1))
    limit, limit_from = server_limit(runner)
    report = WorkloadReport(kind="shared-prefix", max_model_len=limit, max_model_len_from=limit_from)
    save(runner, report)
    if not warm_up(runner):
        return
    method = RESET if reset_cache(runner) else SALT
    how = (
        f"the prefix cache was emptied before each repeat ({RESET_PATH})"
        if method == RESET
        else f"the server does not answer {RESET_PATH}: the prefix starts with a new random salt each repeat"
    )
    report = report.model_copy(update={"cold_method": method}).with_note(how)
    questions = [tuple(m for m in p.messages if m.role != "system") for p in runner.suite.prompts]
    base, total = runner.suite.warmups, runner.suite.warmups + runner.suite.runs * requests
    for repeat in range(1, runner.suite.runs + 1):
        if method == RESET and repeat > 1 and not reset_cache(runner):
            report = report.with_note(
                f"repeat {repeat}: the prefix cache reset failed; its cold TTFT is warm"
            )
        head = "" if method == RESET else f"[{uuid.uuid4().hex}] "
        system = Message("system", head + prefix)
        for i in range(1, requests + 1):
            label = "cold" if i == 1 else "warm"
            number = repeat if i == 1 else (repeat - 1) * (requests - 1) + i - 1
            source = runner.suite.prompts[(i - 1) % len(questions)]
            prompt = SuitePrompt(label, source.max_tokens, (system, *questions[(i - 1) % len(questions)]))
            at = base + (repeat - 1) * requests + i
            measured = runner.step(prompt, at, total, False)
            if measured is None:
                save(runner, report)
                return
            report = report.with_step(step_of(measured, f"{label} {number}", repeat=repeat))
            save(runner, report)
    save(runner, report)
