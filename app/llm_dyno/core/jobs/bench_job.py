"""The benchmark job: a profile's (or a URL's) server, the suite, its GPUs, stored run by run.

``prepare_bench`` resolves everything once and refuses before any request: the endpoint the running
server's plan carries (URL, engine host, API-key reference), the suite checked against the profile
(``max_tokens`` against ``--max-model-len``), the GPUs and how to read them, and the history store
(opened and checked writable). ``run_bench`` sends the key, reads the GPUs into every run (energy,
tokens per joule, mean and peak watts, temperature, throttle reasons), and stores the result after
every finished run, so Ctrl-C, a crash or a malformed answer never loses finished runs.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from llm_dyno.core.bench.ceiling import attach_roofline_for
from llm_dyno.core.bench.gpu import GpuReader, InstantPowerReader
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, EventKind, ProgressEvent, ThermalWait
from llm_dyno.core.bench.session import run_benchmark
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint, MissingSecret
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.store import HistoryStore, default_path
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.gpus import GpuPlan, gpu_reader, plan_gpus
from llm_dyno.core.jobs.storing import RunByRun
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.gpu_source import GpuSource
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.secrets import SecretMissing
from llm_dyno.core.telemetry.nvml import GpuReading

NO_GPUS = GpuPlan(None, "no GPU named")
UNDER_LOAD_KEPT = 64  # GPU readings under load kept with a result (what diagnosis reads)


class SuiteDoesNotFit(DynoError):
    """The suite asks for more tokens than the profile's server accepts."""


@dataclass(frozen=True)
class BenchSpec:
    """Everything a benchmark needs, resolved once by :func:`prepare_bench`."""

    endpoint: Endpoint
    suite: Suite
    profile: Profile | None = None
    gpus: GpuPlan = NO_GPUS
    history_path: Path | None = None  # None: the result is not stored
    tags: tuple[str, ...] = ()
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT  # with a GPU: a stable temperature first

    def with_tags(self, *tags: str) -> BenchSpec:
        """The same benchmark, stored with more tags (a sweep's cap, an A/B side)."""
        return replace(self, tags=(*self.tags, *tags))


@dataclass(frozen=True)
class BenchOutcome:
    """The finished (or cancelled / failed) result and where it was stored."""

    result: BenchResult
    result_id: int | None  # set only when that row holds the whole result
    unsaved: str | None = None  # what failed when the result is not stored whole (RunByRun.unsaved)


def check_suite(suite: Suite, profile: Profile | None) -> list[str]:
    """Refuse (:class:`SuiteDoesNotFit`) a suite whose ``max_tokens`` cannot fit the profile's
    ``--max-model-len``; returns warnings for prompts that may not fit with their prompt tokens."""
    if profile is None or profile.engine().max_model_len is None:
        return []
    limit = profile.engine().max_model_len or 0
    warnings: list[str] = []
    for prompt in suite.prompts:
        # a rough size of the prompt in tokens (about 4 characters each) plus the chat template
        text = sum(len(m.content) for m in prompt.messages) + len(prompt.prompt or "")
        estimate = text // 4 + 16
        if prompt.max_tokens >= limit:
            raise SuiteDoesNotFit(
                f"suite {suite.name!r}: prompt {prompt.name!r} asks for max_tokens {prompt.max_tokens}, but "
                f"profile {profile.name!r} serves at most {limit} tokens (--max-model-len); vLLM would "
                "reject every request",
                hint=f"raise --max-model-len above {prompt.max_tokens + estimate}, or pick a smaller suite "
                "(--suite quick)",
            )
        if prompt.max_tokens + estimate > limit:
            warnings.append(
                f"prompt {prompt.name!r}: max_tokens {prompt.max_tokens} plus about {estimate} prompt tokens "
                f"may exceed --max-model-len {limit}"
            )
    return warnings


def prepare_bench(
    target: Profile | Endpoint,
    suite: Suite,
    *,
    registry: ServerManager | None = None,
    store: bool = True,
    history_path: Path | None = None,
    gpu: int | None = None,
    tags: tuple[str, ...] = (),
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
) -> BenchSpec:
    """Resolve a benchmark of a profile's server (as the registry knows it) or of an endpoint.

    ``gpu`` names this machine's GPU of a server given by URL. Raises before anything runs: an unset
    API key, a suite that does not fit, a history that cannot be written."""
    if isinstance(target, Profile):
        registry = registry or ServerManager()
        handle = registry.get(target.name)
        # planning a profile whose key is unset refuses it, as a launch would
        try:
            plan = (
                handle.plan if handle is not None and handle.status.state.is_live else registry.plan(target)
            )
        except SecretMissing as exc:
            if exc.server_key is None:
                raise
            # the benchmark's own problem: it could not send the key the server would demand
            raise MissingSecret(
                f"the API key ${{{exc.server_key}}} is not set here, so every request would get 401",
                hint=f"set it in the environment that runs llm-dyno ({exc.server_key}=…)",
            ) from None
        endpoint = plan.endpoint
        endpoint.check_key()
        gpus = plan_gpus(plan)
        profile: Profile | None = target
    else:
        endpoint, profile = target, None
        endpoint.check_key()
        gpus = (
            GpuPlan(GpuSource.local((gpu,))) if gpu is not None else GpuPlan(None, "no GPU named (--gpu N)")
        )
    check_suite(suite, profile)
    path = None
    if store:
        path = history_path or default_path()
        with HistoryStore(path) as history:
            history.check_writable()
    return BenchSpec(endpoint, suite, profile, gpus, path, tags, thermal_wait)


class _Recording:
    """Wraps a GPU reader: keeps the latest readings taken under load for the stored result."""

    def __init__(self, reader: GpuReader) -> None:
        self._reader = reader
        # the fast instantaneous-power poll goes straight to the reader (see RunSampler)
        self.instant_power_w: InstantPowerReader | None = getattr(reader, "instant_power_w", None)
        self.first: GpuReading | None = None
        self.kept: deque[GpuReading] = deque(maxlen=UNDER_LOAD_KEPT)
        self._last_kept = 0.0

    def __call__(self) -> GpuReading:
        reading = self._reader()
        if self.first is None:
            self.first = reading
        elif reading.taken_at - self._last_kept >= 1.0:  # one a second is plenty for the rules
            self.kept.append(reading)
            self._last_kept = reading.taken_at
        return reading


def run_bench(spec: BenchSpec, emit: Emit, cancel: threading.Event | None = None) -> BenchOutcome:
    """Run the benchmark; every event goes to ``emit`` (runner :class:`ProgressEvent`,
    :class:`ResultStored`, :class:`StoreFailed`); server trouble ends up in ``result.error``."""
    cancel = cancel or threading.Event()
    spec.endpoint.check_key()  # a key that cannot be sent is refused before anything runs
    recording = _Recording(gpu_reader(spec.gpus.source)) if spec.gpus.source is not None else None
    history = HistoryStore(spec.history_path) if spec.history_path is not None else None
    by_run: RunByRun[BenchResult] = RunByRun(
        history,
        emit,
        add=lambda h, r: h.add(r, tags=spec.tags),
        replace=HistoryStore.replace,
        parts=lambda r: len(r.all_runs()),
    )

    def store(result: BenchResult) -> None:
        if history is not None:
            by_run(_with_gpu_context(result, spec, recording))

    if recording is None and spec.gpus.reason:
        emit(ProgressEvent(EventKind.MESSAGE, message=f"GPU not read: {spec.gpus.reason}"))
    try:
        result = run_benchmark(
            spec.endpoint,
            spec.suite,
            profile=spec.profile,
            gpu=recording,
            progress=emit,
            cancel=cancel,
            thermal_wait=spec.thermal_wait,
            on_run=store,
        )
        result = attach_roofline_for(result, spec.profile)
        if history is not None:  # the result returned is the one stored
            result = _with_gpu_context(result, spec, recording)
        if result.all_runs():
            store(result)
    finally:
        if history is not None:
            history.close()
    return BenchOutcome(result, by_run.saved_id, by_run.unsaved(len(result.all_runs())))


def _with_gpu_context(result: BenchResult, spec: BenchSpec, recording: _Recording | None) -> BenchResult:
    changes: dict[str, Any] = {
        "gpus": spec.gpus.label if spec.gpus.source is not None else None,
        "gpu_read_from": spec.gpus.source.where if spec.gpus.source is not None else None,
    }
    if recording is not None:
        if recording.first is not None:
            changes["gpu_before"] = (recording.first,)
        changes["gpu_under_load"] = tuple(recording.kept)
    return result.with_context(**changes)
