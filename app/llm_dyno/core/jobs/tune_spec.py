"""Prepare a tune: every knob, value and variant checked, the GPUs and the benchmark resolved, once.

``prepare_tune`` is pure in the job layer's sense: it changes nothing and starts nothing. It refuses a
knob the profile cannot take (``num_speculative_tokens`` without a speculative config), a variant the
profile model rejects, a cap outside the GPU's range, a clock the GPU does not support, a server-
changing tune of a profile that is running, and everything :func:`prepare_bench` refuses.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, ThermalWait
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError, Fix
from llm_dyno.core.jobs.bench_job import BenchSpec, check_suite, prepare_bench
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.tune.knobs import KnobError, Vary, apply_settings, check_knob_for
from llm_dyno.core.tune.recipes import recipe_vary
from llm_dyno.core.tune.record import tunes_dir
from llm_dyno.core.tune.trials import MAX_TRIALS, Trial, build_trials

MAX_REPEATS = 10
DEFAULT_REPEATS = 3  # fewer repeats cannot tell a knob's effect from the machine's run-to-run noise


class LaunchMode(StrEnum):
    """How a tune gets its servers."""

    EACH_VARIANT = "each-variant"  # server knobs: it launches each variant itself (stop → launch → ready)
    ONCE = "once"  # GPU knobs only, the profile not running: launched once, stopped at the end
    RUNNING = "running"  # GPU knobs only, on the server already running (or a URL)


@dataclass(frozen=True)
class TuneSpec:
    """A tune resolved by :func:`prepare_tune`."""

    tune_id: str
    name: str  # the profile's name, or the URL's
    profile: Profile | None
    bench: BenchSpec  # the benchmark of every trial; a relaunched variant swaps in its own server
    varies: tuple[Vary, ...]
    trials: tuple[Trial, ...]
    repeats: int
    gpus: tuple[int, ...]  # this machine's GPUs the tune locks (and changes, with GPU knobs)
    launch: LaunchMode
    record_path: Path
    recipe: str | None = None
    timeout_s: float = 900.0
    settle_s: float = 3.0

    def variant(self, trial: Trial) -> Profile:
        """The profile a trial launches (the profile itself for GPU-only trials)."""
        if self.profile is None:
            raise DynoError("a tune of a URL launches nothing")
        return apply_settings(self.profile, trial.server_settings)


def _merge(varies: tuple[Vary, ...], recipe: str | None, gpu: int | None) -> tuple[Vary, ...]:
    given = list(varies)
    if recipe is not None:
        made = recipe_vary(recipe, gpu)
        if all(v.knob != made.knob for v in given):  # an explicit --vary of the same knob wins
            given.insert(0, made)
    if not given:
        raise KnobError(
            "nothing to vary", hint="give --vary KNOB=V1,V2,… or --recipe NAME", fix=Fix.CHOOSE_KNOBS
        )
    seen = set()
    for v in given:
        if v.knob in seen:
            raise KnobError(f"{v.knob.label} is varied twice", hint="give all its values in one --vary")
        seen.add(v.knob)
    return tuple(given)


def _check_gpus(varies: tuple[Vary, ...], gpus: tuple[int, ...], name: str, reason: str | None) -> None:
    gpu_varies = [v for v in varies if not v.knob.relaunch]
    if gpu_varies and not gpus:
        raise KnobError(
            f"{gpu_varies[0].knob.label} changes a GPU of this machine, and {name} runs on none "
            f"({reason or 'no GPU named'})",
            hint="set gpus: in the profile (or --gpu N with --url)",
        )
    for v in gpu_varies:
        kind = v.knob.gpu
        for gpu in gpus:
            if kind is not None:
                kind.preflight(gpu, v.values)


def prepare_tune(
    target: Profile | Endpoint,
    varies: tuple[Vary, ...],
    suite: Suite,
    *,
    recipe: str | None = None,
    registry: ServerManager | None = None,
    repeats: int = DEFAULT_REPEATS,
    store: bool = True,
    gpu: int | None = None,
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
    timeout_s: float = 900.0,
    settle_s: float = 3.0,
    tags: tuple[str, ...] = (),
    gpus: tuple[int, ...] | None = None,
) -> TuneSpec:
    """Resolve a tune of a profile (its variants launched through the registry) or of a URL's server
    (GPU knobs only, ``gpu`` naming this machine's GPU). ``tags`` go on every trial's stored result;
    ``gpus`` overrides the profile's GPUs the tune changes. Raises before anything runs or changes."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise DynoError(f"--repeats must be 1…{MAX_REPEATS}, got {repeats}")
    registry = registry or ServerManager()
    bench = prepare_bench(
        target, suite, registry=registry, store=store, gpu=gpu, thermal_wait=thermal_wait, tags=tags
    )
    gpus = gpus if gpus is not None else bench.gpus.local_gpus
    varies = _merge(varies, recipe, gpus[0] if gpus else None)
    trials = build_trials(varies)
    if len(trials) * repeats > MAX_TRIALS:
        raise DynoError(
            f"{len(trials)} trials × {repeats} repeats is more than {MAX_TRIALS} benchmarks",
            hint="vary fewer values, or fewer knobs at once",
        )
    relaunch = any(v.knob.relaunch for v in varies)
    if isinstance(target, Profile):
        name, profile = target.name, target
        for v in varies:
            check_knob_for(profile, v.knob)
        for trial in trials:  # every variant must be a valid profile whose server takes the suite
            try:
                check_suite(suite, apply_settings(profile, trial.server_settings))
            except DynoError as exc:
                raise KnobError(
                    f"trial {trial.index} ({trial.label}): {exc.message}", hint=exc.hint
                ) from None
        registry.adopt_all()
        handle = registry.get(profile.name)
        running = handle is not None and handle.status.state.is_live
        if relaunch and running:
            raise DynoError(
                f"'{profile.name}' is running: the tune launches each variant itself",
                hint=f"stop it first (llm-dyno stop {profile.name})",
                fix=Fix.STOP_SERVER,
                subject=profile.name,
            )
        launch = LaunchMode.EACH_VARIANT if relaunch else (LaunchMode.RUNNING if running else LaunchMode.ONCE)
    else:
        name, profile = target.url, None
        if relaunch:
            knob = next(v.knob for v in varies if v.knob.relaunch)
            raise KnobError(
                f"{knob.label} changes the server, and a server given by URL cannot be relaunched",
                hint="tune a profile (llm-dyno tune NAME …) to vary its flags, env or image",
            )
        launch = LaunchMode.RUNNING
    _check_gpus(varies, gpus, name, bench.gpus.reason)
    tune_id = uuid.uuid4().hex[:10]
    record_path = tunes_dir() / f"{tune_id}.json"
    try:
        record_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DynoError(f"{record_path.parent}: cannot keep tune records there: {exc.strerror}") from None
    return TuneSpec(
        tune_id, name, profile, bench, varies, trials, repeats, gpus, launch, record_path, recipe,
        timeout_s, settle_s,
    )  # fmt: skip
