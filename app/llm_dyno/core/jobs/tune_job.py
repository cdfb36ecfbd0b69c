"""Run a tune: for each trial (repeats interleaved), relaunch when its server settings differ from the
running server's, set its power cap and clock locks, note the GPU temperature, benchmark it as a bench
job, and save the record; afterwards (always: finished, cancelled, failed or crashed) stop the server
it launched and put the GPU back — the power limit it had before and no clock lock.

The GPUs' locks (:mod:`~llm_dyno.core.jobs.gpu_lock`) are held for the whole run, so the window's power
control, a sweep or a second tune cannot change them meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from llm_dyno.core.bench.ab import ABCancelled, LaunchFailed, profile_server
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.bench_job import BenchSpec, run_bench
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.gpu_lock import gpu_locks
from llm_dyno.core.jobs.gpus import gpu_reader, plan_gpus
from llm_dyno.core.jobs.tune_spec import LaunchMode, TuneSpec
from llm_dyno.core.runtime.base import ServerHandle
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.tune.knob_kinds import KINDS, GpuKind, KnobKind
from llm_dyno.core.tune.knobs import Setting
from llm_dyno.core.tune.record import TrialFinished, TrialRun, TrialStarted, TuneMessage, TuneRecord
from llm_dyno.core.tune.trials import Trial, schedule

TAG = "tune"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _Gpu:
    """What the tune changed on the GPUs, so that :meth:`restore` puts exactly that back."""

    gpus: tuple[int, ...]
    say: Callable[[str], None]
    remembered: dict[tuple[KnobKind, int], float | None] = field(default_factory=dict)
    changed: set[tuple[KnobKind, int]] = field(default_factory=set)

    def remember(self, settings: tuple[Setting, ...]) -> dict[int, float]:
        """Read what the settings will change, before any change (so a failure at the very first set
        still restores the right value); the power limits read, by GPU."""
        for kind in {k for s in settings if (k := s.knob.gpu) is not None}:
            for g in self.gpus:
                self.remembered[(kind.kind, g)] = kind.remember(g)
        return {g: w for (k, g), w in self.remembered.items() if k is KnobKind.POWER and w is not None}

    def apply(self, settings: tuple[Setting, ...]) -> None:
        for s in settings:
            kind = s.knob.gpu
            if kind is None:
                continue
            for g in self.gpus:
                self.changed.add((kind.kind, g))  # before the call: a half-applied change is put back too
                kind.set(g, s.value, self.say)

    def restore(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Put back what was changed: what was restored and what could not be, in words."""
        restored: list[str] = []
        errors: list[str] = []
        for kind in (k for k in KINDS.values() if isinstance(k, GpuKind)):  # power caps, then clock locks
            for g in sorted(g for k, g in self.changed if k is kind.kind):
                try:
                    restored.append(kind.restore(g, self.remembered.get((kind.kind, g)), self.say))
                except Exception as exc:  # every GPU is tried; what failed is in the record and said
                    errors.append(f"GPU {g} {kind.kind.value}: {exc}")
        return tuple(restored), tuple(errors)


class _Server:
    """The server the current trial runs on; relaunched only when the server settings change."""

    def __init__(
        self, spec: TuneSpec, registry: ServerManager, cancel: threading.Event, say: Callable[[str], None]
    ):
        self.spec, self.registry, self.cancel, self.say = spec, registry, cancel, say
        self._stack: contextlib.ExitStack | None = None
        self._key: tuple[Setting, ...] | None = None
        self._bench: BenchSpec | None = None

    def bench_for(self, trial: Trial) -> tuple[BenchSpec, bool]:
        """The benchmark of ``trial``, and whether a (re)launch was needed for it."""
        spec = self.spec
        if spec.launch is LaunchMode.RUNNING:
            return spec.bench, False
        key = trial.server_settings if spec.launch is LaunchMode.EACH_VARIANT else ()
        if self._bench is not None and key == self._key:
            return self._bench, False
        self.close()
        variant = spec.variant(trial)
        handles: list[ServerHandle] = []
        stack = contextlib.ExitStack()
        self._stack = stack
        what = f" ({', '.join(str(s) for s in key)})" if key else ""
        self.say(f"launching '{variant.name}'{what}")
        stack.enter_context(
            profile_server(
                self.registry, variant, spec.timeout_s, cancel=self.cancel, on_handle=handles.append
            )
        )
        plan = handles[-1].plan
        self._bench = replace(spec.bench, endpoint=plan.endpoint, profile=variant, gpus=plan_gpus(plan))
        self._key = key
        return self._bench, True

    def close(self) -> None:
        """Stop the server this tune launched (if any)."""
        stack, self._stack, self._bench, self._key = self._stack, None, None, None
        if stack is not None:
            self.say("stopping the server")
            stack.close()


def _temperature(bench: BenchSpec) -> float | None:
    if bench.gpus.source is None:
        return None
    try:
        return gpu_reader(bench.gpus.source)().temperature_c
    except DynoError:
        return None


def run_tune(
    spec: TuneSpec,
    emit: Emit,
    cancel: threading.Event | None = None,
    *,
    registry: ServerManager | None = None,
) -> TuneRecord:
    """Run every trial (see the module docstring); the record is saved after each and at the end. Bench
    job events pass through to ``emit`` with :class:`TrialStarted`, :class:`TrialFinished` and
    :class:`TuneMessage`. Raises only what the caller's ``emit`` raises (after restoring)."""
    cancel = cancel or threading.Event()
    registry = registry or ServerManager()

    def say(message: str) -> None:
        emit(TuneMessage(message))

    record = TuneRecord(
        spec.tune_id, spec.name, spec.bench.suite.name, spec.varies, spec.trials, spec.repeats, spec.recipe,
        spec.gpus, _now(),
    )  # fmt: skip
    order = schedule(spec.trials, spec.repeats)
    gpu = _Gpu(spec.gpus, say)
    server = _Server(spec, registry, cancel, say)
    cancelled = False
    error: str | None = None
    with gpu_locks(spec.gpus, f"the tune of {spec.name}"):
        try:
            settings = tuple(s for t in spec.trials for s in t.gpu_settings)
            record = record.with_originals(gpu.remember(settings))
            for position, (repeat, trial) in enumerate(order, 1):
                if cancel.is_set():
                    cancelled = True
                    break
                run = _one_trial(spec, trial, repeat, position, len(order), server, gpu, emit, cancel)
                record = record.with_run(run)
                record.save(spec.record_path)
                emit(TrialFinished(run, position, len(order)))
                if (run.result is not None and run.result.cancelled) or cancel.is_set():
                    cancelled = True
                    break
        except ABCancelled:
            cancelled = True
        except KeyboardInterrupt:  # Ctrl-C in a terminal: a cancellation, restored all the same
            cancelled = True
            raise
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            try:
                server.close()
            finally:
                record = record.with_restore(*gpu.restore())
                record = record.finished(_now(), cancelled=cancelled, error=error)
                record.save(spec.record_path)
    return record


def _one_trial(
    spec: TuneSpec, trial: Trial, repeat: int, position: int, total: int, server: _Server, gpu: _Gpu,
    emit: Emit, cancel: threading.Event,
) -> TrialRun:  # fmt: skip
    started = _now()
    try:
        bench, relaunched = server.bench_for(trial)
    except LaunchFailed as exc:
        server.close()
        return TrialRun(trial.index, repeat, None, error=str(exc), relaunched=True, started_at=started)
    gpu.apply(trial.gpu_settings)
    if trial.gpu_settings and spec.settle_s > 0:
        time.sleep(spec.settle_s)  # as the community's sweep script: let the new limit take hold
    temp = _temperature(bench)
    emit(TrialStarted(trial, repeat, position, total, temp))
    tags = (TAG, f"tune-{spec.tune_id}", f"tune-trial-{trial.index}", f"tune-repeat-{repeat}")
    outcome = run_bench(bench.with_tags(*tags), emit, cancel)
    return TrialRun(
        trial.index,
        repeat,
        outcome.result,
        outcome.result_id,
        temp,
        relaunched,
        outcome.result.error,
        started,
    )
