"""The load job: a benchmark's endpoint, suite check, GPUs and history, at several load levels.

``prepare_load`` resolves through :func:`prepare_bench` (the same key check, endpoint, suite check, GPU
plan and writable history as a plain benchmark) and checks the levels; ``run_load`` sends the key, reads
the GPUs over every level (energy, tokens per joule, mean power) and stores the result after every
finished level, so Ctrl-C keeps the levels already done.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from llm_dyno.core.bench.load import LoadError, LoadResult
from llm_dyno.core.bench.load_runner import LoadMessage, LoadPlan, LoadRunner
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.jobs.bench_job import BenchSpec, prepare_bench
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.gpus import gpu_reader
from llm_dyno.core.jobs.storing import RunByRun
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager

MAX_REQUESTS_PER_LEVEL = 10_000


@dataclass(frozen=True)
class LoadSpec:
    """A resolved load run: the benchmark's spec (endpoint, suite, GPUs, history) and the plan."""

    bench: BenchSpec
    plan: LoadPlan


@dataclass(frozen=True)
class LoadOutcome:
    """The finished (or cancelled / failed) load result and where it was stored."""

    result: LoadResult
    result_id: int | None  # set only when that row holds the whole result
    unsaved: str | None = None  # what failed when the result is not stored whole (RunByRun.unsaved)


def prepare_load(
    target: Profile | Endpoint,
    suite: Suite,
    plan: LoadPlan,
    *,
    registry: ServerManager | None = None,
    store: bool = True,
    history_path: Path | None = None,
    gpu: int | None = None,
    tags: tuple[str, ...] = (),
) -> LoadSpec:
    """Resolve a load run as :func:`prepare_bench` resolves a benchmark; refuse an empty or unbounded plan."""
    if not plan.levels:
        raise LoadError("no load level given", hint="--concurrency 1,2,4 or --rate 0.5,1")
    n = plan.requests_per_level
    if n is not None and not (1 <= n <= MAX_REQUESTS_PER_LEVEL):
        raise LoadError(f"--requests must be between 1 and {MAX_REQUESTS_PER_LEVEL}, got {n}")
    if plan.level_timeout_s <= 0:
        raise LoadError(f"--level-timeout must be above 0 s, got {plan.level_timeout_s:g}")
    bench = prepare_bench(
        target, suite, registry=registry, store=store, history_path=history_path, gpu=gpu, tags=tags,
        thermal_wait=None,
    )  # fmt: skip
    return LoadSpec(bench, plan)


def run_load(spec: LoadSpec, emit: Emit, cancel: threading.Event | None = None) -> LoadOutcome:
    """Run every level; events go to ``emit`` (load_runner's events, :class:`ResultStored`,
    :class:`StoreFailed`); server trouble ends up in ``result.error``."""
    b = spec.bench
    history = HistoryStore(b.history_path) if b.history_path is not None else None
    store: RunByRun[LoadResult] = RunByRun(
        history,
        emit,
        add=lambda h, r: h.add_load(r, tags=b.tags),
        replace=HistoryStore.replace_load,
        parts=lambda r: len(r.levels),
    )

    if b.gpus.source is None and b.gpus.reason:
        emit(LoadMessage(f"GPU not read: {b.gpus.reason}"))
    result = LoadResult(
        suite=b.suite.name,
        url=b.endpoint.url,
        model=b.endpoint.model,
        profile=b.profile.name if b.profile is not None else None,
        slo=spec.plan.slo,
        seed=spec.plan.seed,
        requests_per_level=spec.plan.requests_per_level or 0,
        gpus=b.gpus.label if b.gpus.source is not None else None,
    )
    runner = LoadRunner(
        b.endpoint, b.suite, spec.plan,
        gpu=gpu_reader(b.gpus.source) if b.gpus.source is not None else None,
        emit=emit, cancel=cancel, on_level=store,
    )  # fmt: skip
    try:
        result = runner.run(result)
        if result.levels:
            store(result)  # the finish time and a final error or cancel
    finally:
        if history is not None:
            history.close()
    return LoadOutcome(result, store.saved_id, store.unsaved(len(result.levels), "levels"))
