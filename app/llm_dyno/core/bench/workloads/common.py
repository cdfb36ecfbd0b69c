"""What every workload kind shares: warm-ups, the server's context limit, a step's record, the report
kept in the result."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from llm_dyno.core.bench.client import StreamError
from llm_dyno.core.bench.suite import Message, Suite, SuitePrompt
from llm_dyno.core.bench.workloads.records import WORKLOAD_KEY, WorkloadReport, WorkloadStep

if TYPE_CHECKING:
    from llm_dyno.core.bench.workloads.protocol import Measured, WorkloadRunner

DEFAULT_TURNS = 8  # multi-turn
DEFAULT_REQUESTS = 8  # shared-prefix: requests per repeat


def save(runner: WorkloadRunner, report: WorkloadReport) -> None:
    """Keep ``report`` in the runner's result (its context's ``extra``), replacing the one before."""
    extra = {**runner.result.context.extra, WORKLOAD_KEY: report.model_dump(mode="json")}
    runner.result = runner.result.with_context(extra=extra)


def warm_up(runner: WorkloadRunner) -> bool:
    """The suite's warm-ups: its first prompt as written, each with a fresh salt (so no warm-up leaves
    a prefix a measured step could reuse); False when the suite ended meanwhile."""
    first = runner.suite.prompts[0]
    n = runner.suite.warmups
    for i in range(1, n + 1):
        prompt = SuitePrompt("warm-up", first.max_tokens, salted(first.messages))
        if runner.step(prompt, i, n, True) is None:
            return False
    return True


def salted(messages: tuple[Message, ...], salt: str | None = None) -> tuple[Message, ...]:
    """``messages`` with a random salt before the first one's text: a prompt no cache has seen."""
    if not messages:
        return messages
    head = f"[{salt or uuid.uuid4().hex}] "
    return (Message(messages[0].role, head + messages[0].content), *messages[1:])


def server_limit(runner: WorkloadRunner) -> tuple[int | None, str | None]:
    """The served model's context limit (its ``--max-model-len``) as vLLM lists it in ``/v1/models``,
    and where it was read; (None, None) when the server does not say."""
    try:
        listing = runner.client.get_json("/v1/models")
    except StreamError:
        listing = None
    models = listing.get("data") if isinstance(listing, dict) else None
    for entry in models if isinstance(models, list) else []:
        if isinstance(entry, dict) and entry.get("id") == runner.model:
            value = entry.get("max_model_len")
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value, "server (/v1/models)"
    return None, None


def step_of(measured: Measured, label: str, *, repeat: int = 1, target: int | None = None) -> WorkloadStep:
    """A workload step from one measured run: its timings, the cached prompt tokens (the usage's
    ``cached_tokens`` when the server sends it, else the prefix-cache hits counted during the run),
    the reasoning split and the acceptance."""
    run, outcome = measured.run, measured.outcome
    queries = hits = None
    if measured.before is not None and measured.after is not None:
        queries = _delta(measured.before.prefix_cache_queries, measured.after.prefix_cache_queries)
        hits = _delta(measured.before.prefix_cache_hits, measured.after.prefix_cache_hits)
    cached, cached_from = outcome.cached_tokens, "usage"
    if cached is None:
        cached, cached_from = hits, "counters"
    reasoning = outcome.reasoning_tokens
    return WorkloadStep(
        label=label,
        prompt=run.prompt,
        repeat=repeat,
        context_tokens=run.prompt_tokens,
        target_tokens=target,
        completion_tokens=run.completion_tokens,
        ttft_s=run.ttft_s,
        decode_tps=run.decode_tps,
        # a burst shows no time between passes (its gaps are the client's, not the server's)
        pass_s=run.latency.mean_s if run.latency is not None and not run.burst else None,
        cached_tokens=cached,
        cached_from=cached_from if cached is not None else None,
        prefix_queries=queries,
        prefix_hits=hits,
        first_reasoning_s=outcome.first_reasoning_s,
        first_content_s=outcome.first_content_s,
        reasoning_tokens=reasoning,
        content_tokens=run.completion_tokens - reasoning if reasoning is not None else None,
        acceptance_rate=run.acceptance.rate if run.acceptance is not None else None,
    )


def _delta(before: float | None, after: float | None) -> int | None:
    if before is None or after is None or after < before:  # absent, or the server restarted
        return None
    return round(after - before)


def setting(runner: WorkloadRunner, key: str, default: Any) -> Any:
    """A setting of the suite's ``workload:`` mapping (checked when the suite was read)."""
    return runner.suite.workload.get(key, default)


def planned_runs(suite: Suite) -> int:
    """How many requests ``suite`` makes at most (a progress bar's length): a standard suite's prompts
    times its warm-ups and runs; a workload's from its settings (a limit may end it sooner)."""
    w, r, s = suite.warmups, suite.runs, suite.workload
    if suite.kind == "multi-turn":
        return w + int(s.get("turns", DEFAULT_TURNS))
    if suite.kind == "shared-prefix":
        return w + r * int(s.get("requests", DEFAULT_REQUESTS))
    if suite.kind == "context-sweep":
        return 2 + len(s.get("contexts", [])) * (w + r)  # the two calibration requests first
    return len(suite.prompts) * (w + r)
