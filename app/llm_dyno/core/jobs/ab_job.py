"""The spec-decode A/B job: both sides launched through the registry, benchmarked as bench jobs.

The sides take turns over the rounds (A B A B, so drift hits both); once done, each side's result
(merged over its rounds) is stored with the tags ``ab``, ``ab-without`` / ``ab-with`` and a shared
``ab-pair-<id>``, so ``history`` lists both and diagnosis finds the latest A/B of a profile.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, replace

from llm_dyno.core.bench.ab import (
    AB_TAG,
    DEFAULT_ROUNDS,
    PAIR_PREFIX,
    PAIR_SIDE_TAGS,
    SIDE_TAGS,
    has_spec_config,
    run_profile_ab,
)
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, ThermalWait
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import ABResult, without_spec_decode
from llm_dyno.core.errors import DynoError, Fix
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.jobs.bench_job import BenchSpec, check_suite, prepare_bench, run_bench
from llm_dyno.core.jobs.events import Emit
from llm_dyno.core.jobs.gpus import plan_gpus
from llm_dyno.core.jobs.storing import ResultStored
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerHandle
from llm_dyno.core.runtime.manager import ServerManager


@dataclass(frozen=True)
class ABSpec:
    """An A/B resolved by :func:`prepare_ab`."""

    profile: Profile
    bench: BenchSpec  # the with-spec side's benchmark; the other side differs only in its profile
    timeout_s: float = 900.0
    rounds: int = DEFAULT_ROUNDS  # A B A B …: each round launches each side once
    against: Profile | None = None  # the baseline; None: the profile without its speculative config

    @property
    def baseline(self) -> Profile:
        """The side compared against: ``against``, or the profile without spec decoding."""
        return self.against or without_spec_decode(self.profile)


@dataclass(frozen=True)
class ABOutcome:
    """Both sides, the verdicts, and the ids the sides were stored under (without, with)."""

    ab: ABResult
    result_ids: tuple[int | None, int | None]


def prepare_ab(
    profile: Profile,
    suite: Suite,
    *,
    registry: ServerManager | None = None,
    store: bool = True,
    timeout_s: float = 900.0,
    rounds: int = DEFAULT_ROUNDS,
    thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
    against: Profile | None = None,
) -> ABSpec:
    """Refuse before anything launches: no speculative config (without ``against``), either profile
    already running, the same profile twice, a suite that does not fit, an unset key, an unwritable
    history. ``against`` is the baseline profile; without it, the profile without spec decoding."""
    registry = registry or ServerManager()
    if against is not None and against.name == profile.name:
        raise DynoError(
            f"'{profile.name}' --against '{against.name}': an A/B needs two different profiles",
            hint="name the copy to compare, e.g. the one `diagnose NAME --apply ID` created",
        )
    if against is None and not has_spec_config(profile):
        raise DynoError(
            f"profile '{profile.name}' has no --speculative-config: there is nothing to compare",
            hint='add e.g. --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
        )
    if rounds < 1:
        raise DynoError(f"an A/B needs at least one round, got {rounds}")
    registry.adopt_all()
    for side in (profile, against) if against is not None else (profile,):
        handle = registry.get(side.name)
        if handle is not None and handle.status.state.is_live:
            raise DynoError(
                f"'{side.name}' is running: the A/B launches each side itself, one after the other",
                hint=f"stop it first (llm-dyno stop {side.name})",
                fix=Fix.STOP_SERVER,
                subject=side.name,
            )
    check_suite(suite, against or without_spec_decode(profile))
    bench = prepare_bench(profile, suite, registry=registry, store=store, thermal_wait=thermal_wait)
    if against is not None:
        prepare_bench(against, suite, registry=registry, store=store, thermal_wait=thermal_wait)
    return ABSpec(profile, bench, timeout_s, rounds, against)


def run_ab(
    spec: ABSpec, emit: Emit, cancel: threading.Event | None = None, *, registry: ServerManager | None = None
) -> ABOutcome:
    """Launch, benchmark and stop each side in turn (A B A B … over the rounds), then store both sides:
    a side is one result merged over its rounds, so a comparison is stored whole or not at all."""
    registry = registry or ServerManager()
    cancel = cancel or threading.Event()

    def run_side(which: Profile, handle: ServerHandle, suite: Suite) -> BenchResult:
        bench = replace(
            spec.bench,
            endpoint=handle.plan.endpoint,
            profile=which,
            gpus=plan_gpus(handle.plan),
            suite=suite,
            history_path=None,  # the merged sides are stored once the A/B is done
        )
        return run_bench(bench, emit, cancel).result

    labels = ("without", "with spec decoding") if spec.against is None else ("A", "B")
    ab = run_profile_ab(
        spec.baseline,
        spec.profile,
        spec.bench.suite,
        registry,
        run_side,
        emit,
        cancel,
        timeout_s=spec.timeout_s,
        rounds=spec.rounds,
        labels=labels,
    )
    return ABOutcome(ab, _store(spec, ab, emit))


def _store(spec: ABSpec, ab: ABResult, emit: Emit) -> tuple[int | None, int | None]:
    if spec.bench.history_path is None:
        return (None, None)
    pair = f"{PAIR_PREFIX}{uuid.uuid4().hex[:12]}"
    side_tags = SIDE_TAGS if spec.against is None else PAIR_SIDE_TAGS
    ids: list[int | None] = []
    with HistoryStore(spec.bench.history_path) as history:
        for side, result in (("without", ab.without_spec), ("with", ab.with_spec)):
            if not result.all_runs():
                ids.append(None)
                continue
            rid = history.add(result, tags=(*spec.bench.tags, AB_TAG, side_tags[side], pair))
            emit(ResultStored(rid, len(result.all_runs())))
            ids.append(rid)
    return (ids[0], ids[1])
