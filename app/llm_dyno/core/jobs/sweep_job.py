"""The power-cap sweep job: the profile's GPUs, each cap checked before any change, results stored.

The sweep holds the lock of every GPU it changes (:mod:`~llm_dyno.core.jobs.gpu_lock`) for its whole
run, so the dashboard's power control (or a second sweep) cannot change them meanwhile; the original
limits are restored in ``finally`` by :func:`~llm_dyno.core.bench.sweep.run_sweep`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, EventKind, ProgressEvent, ThermalWait
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import PowerController, SweepResult, run_sweep
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.bench_job import BenchSpec, Emit, prepare_bench, run_bench
from llm_dyno.core.jobs.gpu_lock import gpu_locks
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.telemetry import power


@dataclass(frozen=True)
class SweepSpec:
    """A sweep resolved by :func:`prepare_sweep`: the benchmark, the caps and this machine's GPUs."""

    bench: BenchSpec
    caps: tuple[float, ...]
    gpus: tuple[int, ...]


def parse_caps(text: str) -> tuple[float, ...]:
    """``"230,260, 290"`` → (230.0, 260.0, 290.0); a clear error otherwise."""
    try:
        caps = tuple(float(c) for c in text.split(",") if c.strip())
    except ValueError:
        raise DynoError(f"caps must be numbers separated by commas, got {text!r}") from None
    if not caps:
        raise DynoError("give at least one cap, e.g. 230,260,290,330")
    return caps


def prepare_sweep(
    profile: Profile,
    caps: tuple[float, ...],
    suite: Suite,
    *,
    registry: ServerManager | None = None,
    gpus: tuple[int, ...] | None = None,
    check_limits: bool = True,
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
) -> SweepSpec:
    """Resolve a sweep of ``profile``'s server: its GPUs (or ``gpus``), every cap checked against each
    GPU's allowed range, the power control available; refuses before anything changes."""
    bench = prepare_bench(profile, suite, registry=registry, thermal_wait=thermal_wait)
    targets = gpus if gpus is not None else bench.gpus.local_gpus
    if not targets:
        raise DynoError(
            f"profile '{profile.name}' runs on no GPU of this machine "
            f"({bench.gpus.reason or bench.gpus.label}): a sweep changes this machine's GPU power limit",
            hint="set gpus: in the profile (or --gpu N)",
        )
    if check_limits:
        for gpu in targets:
            reason = power.control_unavailable_reason(gpu)
            if reason is not None:
                raise DynoError(reason)
            limit = power.read_power_limit(gpu)
            for cap in caps:
                limit.check(cap)
    return SweepSpec(bench, tuple(caps), tuple(targets))


def run_sweep_job(
    spec: SweepSpec,
    emit: Emit,
    cancel: threading.Event | None = None,
    *,
    controller: PowerController | None = None,
    settle_s: float = 3.0,
) -> SweepResult:
    """Benchmark at each cap with the GPUs locked; every cap's result is stored (tags sweep, cap-N)."""
    cancel = cancel or threading.Event()
    ctl = controller or power.default_controller()
    name = spec.bench.profile.name if spec.bench.profile is not None else spec.bench.endpoint.url

    def say(message: str) -> None:
        emit(ProgressEvent(EventKind.MESSAGE, message=message))

    with gpu_locks(spec.gpus, f"the power-cap sweep of {name}"):
        return run_sweep(
            spec.caps,
            ctl,
            lambda cap: run_bench(spec.bench.with_tags("sweep", f"cap-{cap:.0f}"), emit, cancel).result,
            gpu=spec.gpus,
            cancel=cancel,
            progress=say,
            settle_s=settle_s,
        )
