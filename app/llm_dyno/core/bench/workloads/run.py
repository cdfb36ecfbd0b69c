"""The runner's hook for workload suites: the dispatch to the kind's module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_dyno.core.bench.workloads import context_sweep, multi_turn, shared_prefix

if TYPE_CHECKING:
    from llm_dyno.core.bench.workloads.protocol import WorkloadRunner


def run_workload(runner: WorkloadRunner) -> None:
    """Run the runner's workload suite (its ``kind``) into ``runner.result``; server trouble ends it as
    a standard suite's (``result.error``), with the steps measured so far kept."""
    kinds = {
        "multi-turn": multi_turn.run,
        "shared-prefix": shared_prefix.run,
        "context-sweep": context_sweep.run,
    }
    kinds[runner.suite.kind](runner)
