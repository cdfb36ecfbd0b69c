"""One call to benchmark a server: client, counters, context and runner wired together."""

from __future__ import annotations

import threading
from collections.abc import Callable

from llm_dyno.core.bench.client import BenchClient
from llm_dyno.core.bench.context import collect_context
from llm_dyno.core.bench.counters import metrics_source
from llm_dyno.core.bench.gpu import GpuReader
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import (
    DEFAULT_THERMAL_WAIT,
    BenchRunner,
    EventKind,
    Progress,
    ProgressEvent,
    ThermalWait,
)
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.profiles.model import Profile


def run_benchmark(
    endpoint: Endpoint,
    suite: Suite,
    *,
    profile: Profile | None = None,
    gpu: GpuReader | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
    on_run: Callable[[BenchResult], None] | None = None,
) -> BenchResult:
    """Benchmark the server of ``endpoint`` (its URL, model and key) with ``suite``; server trouble ends
    up in ``result.error``.

    With a ``gpu`` reader each prompt first waits for a stable temperature (``thermal_wait``; None:
    no wait) and every run records the thermal state it started from. ``on_run(result)`` is called
    after every finished run with the result so far (to store it)."""
    model = endpoint.model
    with BenchClient(endpoint) as client:
        reading = None
        if gpu is not None:
            try:
                reading = gpu()
            except Exception:  # the context is still worth having without GPU details
                reading = None
        result = BenchResult(
            suite.name, collect_context(client, model=model, suite=suite, profile=profile, gpu=reading)
        )

        def report(event: ProgressEvent) -> None:
            # a run is stored before it is shown: what a user saw finish is what Ctrl-C keeps
            if on_run is not None and event.kind is EventKind.RUN_FINISHED:
                on_run(runner.result)
            if progress is not None:
                progress(event)

        runner = BenchRunner(
            client,
            suite,
            model,
            counters=metrics_source(client),
            gpu=gpu,
            progress=report,
            cancel=cancel,
            thermal_wait=thermal_wait,
        )
        return runner.run(result)
