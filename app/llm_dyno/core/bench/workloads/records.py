"""What a workload measured, step by step: stored in the result's context under ``workload``.

A workload's runs are ordinary :class:`~llm_dyno.core.bench.result.BenchRun` records (one prompt per
step, so the history, comparisons and exports read them as they read any suite); what only a workload
knows (cached prompt tokens, prefix-cache counts, reasoning timings, skipped lengths, how the prefix
was made cold) is this report, kept in ``RunContext.extra["workload"]``.
"""

from __future__ import annotations

from typing import Any

from llm_dyno.core.records import Record

WORKLOAD_KEY = "workload"  # the key in RunContext.extra


class WorkloadStep(Record):
    """One measured request of a workload: a turn, a cold or warm request, a context length."""

    label: str  # "turn 3", "cold", "warm 2", "8192"
    prompt: str  # the result's prompt name the run is stored under
    repeat: int = 1
    context_tokens: int | None = None  # the prompt's tokens as the server counted them
    target_tokens: int | None = None  # context sweep: the length asked for
    completion_tokens: int = 0
    ttft_s: float | None = None
    decode_tps: float | None = None
    pass_s: float | None = None  # mean time between streamed events after the first: one decode pass
    cached_tokens: int | None = None
    cached_from: str | None = None  # "usage" (prompt_tokens_details) or "counters" (prefix-cache Δ)
    prefix_queries: int | None = None  # Δ vllm:prefix_cache_queries over the request (tokens)
    prefix_hits: int | None = None  # Δ vllm:prefix_cache_hits
    first_reasoning_s: float | None = None
    first_content_s: float | None = None
    reasoning_tokens: int | None = None
    content_tokens: int | None = None
    acceptance_rate: float | None = None

    @property
    def hit_rate(self) -> float | None:
        """Prefix-cache hits over queries for this request, when the server counted any."""
        if not self.prefix_queries or self.prefix_hits is None:
            return None
        return self.prefix_hits / self.prefix_queries


class WorkloadReport(Record):
    """A whole workload: its kind, steps in order, and what it says about them in words."""

    kind: str
    steps: tuple[WorkloadStep, ...] = ()
    max_model_len: int | None = None
    max_model_len_from: str | None = None  # "server (/v1/models)"
    cold_method: str | None = None  # shared prefix: "reset" (POST /reset_prefix_cache) or "salt"
    skipped: tuple[str, ...] = ()  # what was not run and why, one line each
    notes: tuple[str, ...] = ()

    def with_step(self, step: WorkloadStep) -> WorkloadReport:
        """This report with ``step`` added after the others."""
        return self.model_copy(update={"steps": (*self.steps, step)})

    def with_note(self, note: str, *, skipped: bool = False) -> WorkloadReport:
        """This report with a note (or a skipped line) added."""
        key = "skipped" if skipped else "notes"
        return self.model_copy(update={key: (*getattr(self, key), note)})

    def hit_rate(self, label_prefix: str = "") -> float | None:
        """Prefix-cache hits over queries summed over the steps whose label starts with ``label_prefix``."""
        steps = [s for s in self.steps if s.label.startswith(label_prefix) and s.prefix_queries]
        queries = sum(s.prefix_queries or 0 for s in steps)
        return sum(s.prefix_hits or 0 for s in steps) / queries if queries else None

    def mean(self, field: str, label_prefix: str = "") -> float | None:
        """The mean of a step field over the steps whose label starts with ``label_prefix``."""
        values = [getattr(s, field) for s in self.steps if s.label.startswith(label_prefix)]
        known = [float(v) for v in values if v is not None]
        return sum(known) / len(known) if known else None


def workload_of(extra: dict[str, Any]) -> WorkloadReport | None:
    """The workload report in a result context's ``extra``, or None (a standard suite, an older result,
    or a stored report this version cannot read)."""
    raw = extra.get(WORKLOAD_KEY)
    if not isinstance(raw, dict):
        return None
    try:
        return WorkloadReport.model_validate(raw)
    except ValueError:
        return None
