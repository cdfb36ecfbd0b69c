"""The spec-decode A/B job: both sides launched through the registry, benchmarked as bench jobs.

Each side's result is stored as it runs (tags ``ab``, ``ab-without`` / ``ab-with`` and a shared
``ab-pair-<id>``), so ``history`` lists both and diagnosis finds the latest A/B of a profile.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, replace

from llm_dyno.core.bench.ab import AB_TAG, PAIR_PREFIX, SIDE_TAGS, has_spec_config, run_spec_ab
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import ABResult, without_spec_decode
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.bench_job import BenchSpec, Emit, check_suite, prepare_bench, run_bench
from llm_dyno.core.jobs.endpoint import profile_endpoint
from llm_dyno.core.jobs.gpus import plan_gpus
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerHandle
from llm_dyno.core.runtime.manager import ServerManager


@dataclass(frozen=True)
class ABSpec:
    """An A/B resolved by :func:`prepare_ab`."""

    profile: Profile
    bench: BenchSpec  # the with-spec side's benchmark; the other side differs only in its profile
    timeout_s: float = 900.0


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
) -> ABSpec:
    """Refuse before anything launches: no speculative config, the profile already running, a suite that
    does not fit, an unset key, an unwritable history."""
    registry = registry or ServerManager()
    if not has_spec_config(profile):
        raise DynoError(
            f"profile '{profile.name}' has no --speculative-config: there is nothing to compare",
            hint='add e.g. --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
        )
    registry.adopt_all()
    handle = registry.get(profile.name)
    if handle is not None and handle.status.state.is_live:
        raise DynoError(
            f"'{profile.name}' is running: the A/B launches it twice itself "
            "(without, then with spec decoding)",
            hint=f"stop it first (llm-dyno stop {profile.name})",
        )
    check_suite(suite, without_spec_decode(profile))
    return ABSpec(profile, prepare_bench(profile, suite, registry=registry, store=store), timeout_s)


def run_ab(
    spec: ABSpec, emit: Emit, cancel: threading.Event | None = None, *, registry: ServerManager | None = None
) -> ABOutcome:
    """Launch, benchmark and stop each side in turn; both results stored run by run."""
    registry = registry or ServerManager()
    cancel = cancel or threading.Event()
    pair = uuid.uuid4().hex[:12]
    ids: dict[str, int | None] = {"without": None, "with": None}

    def run_side(which: Profile, handle: ServerHandle) -> BenchResult:
        side = "with" if which.name == spec.profile.name else "without"
        bench = replace(
            spec.bench,
            endpoint=profile_endpoint(which, handle.plan),
            profile=which,
            gpus=plan_gpus(handle.plan),
        ).with_tags(AB_TAG, SIDE_TAGS[side], f"{PAIR_PREFIX}{pair}")
        outcome = run_bench(bench, emit, cancel)
        ids[side] = outcome.result_id
        return outcome.result

    ab = run_spec_ab(
        spec.profile, spec.bench.suite, registry, run_side, emit, cancel, timeout_s=spec.timeout_s
    )
    return ABOutcome(ab, (ids["without"], ids["with"]))
