"""The power-cap sweep job: the tune engine's power-cap recipe, shown as the community's sweep table.

A sweep is a tune of one knob, ``power``, over the given caps (:mod:`llm_dyno.core.tune`): each cap is
checked against every GPU's range before any change, the GPUs' locks are held for the whole run
(:mod:`~llm_dyno.core.jobs.gpu_lock`), every cap's benchmark is stored (tags ``sweep`` and the tune's),
and the original limits are restored in ``finally``, also on cancel or an error. A profile that is not
running is launched once for the sweep (a cap needs no relaunch) and stopped afterwards.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, EventKind, ProgressEvent, ThermalWait
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import SweepPoint, SweepResult
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.events import Emit, JobEvent
from llm_dyno.core.jobs.tune_job import run_tune
from llm_dyno.core.jobs.tune_spec import TuneSpec, prepare_tune
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.tune.knobs import Knob, KnobKind, Vary
from llm_dyno.core.tune.record import TuneMessage, TuneRecord

SWEEP_TAG = "sweep"


@dataclass(frozen=True)
class SweepSpec:
    """A sweep resolved by :func:`prepare_sweep`: the tune over the caps."""

    tune: TuneSpec
    caps: tuple[float, ...]

    @property
    def gpus(self) -> tuple[int, ...]:
        """This machine's GPUs the sweep changes."""
        return self.tune.gpus


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
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
) -> SweepSpec:
    """Resolve a sweep of ``profile``'s server: its GPUs (or ``gpus``), every cap checked against each
    GPU's allowed range, the power control available; refuses before anything changes."""
    if len(set(caps)) != len(caps):
        raise DynoError("a cap is given twice")
    vary = Vary(Knob(KnobKind.POWER), tuple(f"{c:g}" for c in caps))
    tune = prepare_tune(  # one benchmark per cap (the suite repeats its own runs), as sweeps always did
        profile, (vary,), suite, registry=registry, thermal_wait=thermal_wait, tags=(SWEEP_TAG,), gpus=gpus,
        repeats=1,
    )  # fmt: skip
    return SweepSpec(tune, tuple(caps))


def run_sweep_job(
    spec: SweepSpec,
    emit: Emit,
    cancel: threading.Event | None = None,
    *,
    registry: ServerManager | None = None,
) -> SweepResult:
    """Benchmark at each cap (see the module docstring); the tune's steps reach ``emit`` as messages."""

    def relay(event: JobEvent) -> None:
        emit(
            ProgressEvent(EventKind.MESSAGE, message=event.message)
            if isinstance(event, TuneMessage)
            else event
        )

    return sweep_result(run_tune(spec.tune, relay, cancel, registry=registry))


def sweep_result(record: TuneRecord) -> SweepResult:
    """The tune's record as the sweep's points (one per cap), originals, restore state and error."""
    points = tuple(
        SweepPoint(float(record.trial(r.trial).settings[0].value), r.result)
        for r in record.runs
        if r.result is not None
    )
    errors = [f"at {record.trial(r.trial).settings[0].value} W: {r.error}" for r in record.runs if r.error]
    first = record.original_power_w[0][1] if record.original_power_w else None
    return SweepResult(
        points, first, record.original_power_w, bool(record.restored),
        record.error or (errors[0] if errors else None), record.cancelled,
    )  # fmt: skip
