"""What a workload needs of the runner (core/bench/runner.py implements it): its suite, client and
result, and one measured step at a time. Kept here so the workloads never import the runner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from llm_dyno.core.bench.client import BenchClient, StreamOutcome
from llm_dyno.core.bench.result import BenchResult, BenchRun
from llm_dyno.core.bench.suite import Suite, SuitePrompt
from llm_dyno.core.telemetry.metrics import MetricsSnapshot


@dataclass(frozen=True)
class Measured:
    """One run and what it was made from: the stream's outcome and the /metrics scrapes around it."""

    run: BenchRun
    outcome: StreamOutcome
    before: MetricsSnapshot | None
    after: MetricsSnapshot | None


class WorkloadRunner(Protocol):
    """The runner as a workload drives it."""

    suite: Suite
    model: str
    client: BenchClient
    result: BenchResult

    def step(self, prompt: SuitePrompt, i: int, total: int, warmup: bool) -> Measured | None:
        """Run ``prompt`` once and add it to the result; None when the suite ends here."""
        ...
