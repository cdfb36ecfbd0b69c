"""Spec-decode A/B end to end: launch the profile without, then with, its speculative config; benchmark each.

One server at a time: :func:`profile_server` launches through a
:class:`~llm_dyno.core.runtime.manager.ServerManager`, waits for READY and always stops the server
on the way out (error, cancellation, Ctrl-C), so no server is left behind. :func:`run_spec_ab` drives
:func:`~llm_dyno.core.bench.sweep.spec_ab` with two such factories and verdicts per prompt
("net gain", "net loss", "within noise") from the measured wall TPS.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import EventKind, Progress, ProgressEvent
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.bench.sweep import _AB_WORDS, ABResult, spec_ab, without_spec_decode
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerHandle, ServerState
from llm_dyno.core.runtime.manager import ServerManager

DEFAULT_TIMEOUT_S = 900.0
DEFAULT_ROUNDS = 2  # A B A B: drift (a GPU warming up, other load) hits both sides
# How both sides of an A/B are stored in the history (the jobs layer tags them; diagnosis finds them).
AB_TAG = "ab"
SIDE_TAGS = {"without": "ab-without", "with": "ab-with"}
# the sides of an A/B of two profiles (``ab NAME --against OTHER``): not read as a spec-decode A/B
PAIR_SIDE_TAGS = {"without": "ab-baseline", "with": "ab-candidate"}
PAIR_PREFIX = "ab-pair-"  # both sides of one A/B carry the same ab-pair-<id> tag
_SPEC_FLAGS = ("--speculative-config", "--speculative_config")


class LaunchFailed(DynoError):
    """A server of the A/B did not come up; ``reason`` holds the classified failure when there is one."""

    def __init__(self, message: str, *, hint: str | None = None, reason: Any = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class ABCancelled(DynoError):
    """The A/B was cancelled (the server that was up has been stopped)."""


def _stop(manager: ServerManager, handle: ServerHandle, timeout: float = 30.0) -> None:
    with contextlib.suppress(DynoError):
        handle.stop(timeout)
    manager.forget(handle.profile_name)


@contextlib.contextmanager
def profile_server(
    manager: ServerManager,
    profile: Profile,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    cancel: threading.Event | None = None,
    on_handle: Callable[[ServerHandle], None] | None = None,
) -> Iterator[Endpoint]:
    """Launch ``profile``, wait until READY and yield its :class:`Endpoint`; stop it on exit, always.

    Raises :class:`LaunchFailed` with the classified reason and its log excerpt when the server fails
    (or is not ready within ``timeout_s``), :class:`ABCancelled` when ``cancel`` is set while waiting,
    and ``LaunchBlocked`` (from the manager) when the port or GPU is taken.
    """
    handle = manager.launch(profile)
    if on_handle is not None:
        on_handle(handle)
    try:
        deadline = time.monotonic() + timeout_s
        status = handle.status
        while status.state is not ServerState.READY:
            if not status.state.is_live:
                reason = status.failure
                if reason is None:
                    raise LaunchFailed(f"'{profile.name}' ended before it was ready ({status.detail})")
                excerpt = "\n".join(f"    {line}" for line in reason.excerpt[-12:])
                raise LaunchFailed(
                    f"'{profile.name}' failed to start: [{reason.kind.value}] {reason.summary}"
                    + (f"\n{excerpt}" if excerpt else ""),
                    hint=reason.hint or None,
                    reason=reason,
                )
            if cancel is not None and cancel.is_set():
                raise ABCancelled(f"cancelled while '{profile.name}' was starting")
            if time.monotonic() >= deadline:
                raise LaunchFailed(
                    f"'{profile.name}' was not ready within {timeout_s:.0f} s "
                    f"(last state: {status.state.value})",
                    hint="see its log with `llm-dyno logs NAME`",
                )
            status = handle.wait_ready(0.25)
        yield handle.plan.endpoint
    finally:
        _stop(manager, handle)


def has_spec_config(profile: Profile) -> bool:
    """Whether the profile's flags carry a speculative config (either spelling, ``=`` form too)."""
    return any(a in _SPEC_FLAGS or a.startswith(tuple(f"{f}=" for f in _SPEC_FLAGS)) for a in profile.args)


SideRunner = Callable[[Profile, ServerHandle, Suite], BenchResult]
"""Benchmarks one round of one side of the A/B: the profile that side launched, its running server and
the suite of that round."""


def run_spec_ab(
    profile: Profile,
    suite: Suite,
    manager: ServerManager,
    run_side: SideRunner,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rounds: int = DEFAULT_ROUNDS,
) -> ABResult:
    """Benchmark ``profile`` without its speculative config (baseline) and with it (candidate): the
    case of :func:`run_profile_ab` whose baseline is :func:`without_spec_decode` of the candidate."""
    return run_profile_ab(
        without_spec_decode(profile), profile, suite, manager, run_side, progress, cancel,
        timeout_s=timeout_s, rounds=rounds, labels=("without", "with spec decoding"),
    )  # fmt: skip


def run_profile_ab(
    baseline: Profile,
    candidate: Profile,
    suite: Suite,
    manager: ServerManager,
    run_side: SideRunner,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    rounds: int = DEFAULT_ROUNDS,
    labels: tuple[str, str] = ("A", "B"),
) -> ABResult:
    """Benchmark ``baseline`` and ``candidate`` with the same suite, one server at a time.

    The two servers run one after the other (the same port and GPUs); each is stopped before the next
    starts. With ``rounds`` > 1 the sides take turns (A B A B …, each round a launch of each), every
    round running ``suite`` with its runs split over the rounds (rounded up), so drift hits both.
    ``run_side(profile, handle, suite)`` benchmarks one side's round (the job layer: its GPUs and key).
    ``labels`` name the sides (baseline, candidate) in the progress messages. Raises a DynoError for a
    launch that fails or a cancellation; server trouble during a suite ends up in that side's
    ``result.error``.
    """
    cancel = cancel or threading.Event()
    say = progress or (lambda _e: None)
    current: dict[str, Any] = {}

    def factory(which: Profile, label: str) -> Callable[[], contextlib.AbstractContextManager[Endpoint]]:
        def make() -> contextlib.AbstractContextManager[Endpoint]:
            if cancel.is_set():
                raise ABCancelled("A/B cancelled")
            say(ProgressEvent(EventKind.MESSAGE, message=f"launching '{which.name}' ({label})"))
            current["profile"] = which
            return profile_server(
                manager, which, timeout_s, cancel=cancel, on_handle=lambda h: current.update(handle=h)
            )

        return make

    def run_suite(endpoint: Endpoint) -> BenchResult:
        which: Profile = current["profile"]
        say(ProgressEvent(EventKind.MESSAGE, message=f"benchmarking '{which.name}' at {endpoint.url}"))
        result = run_side(which, current["handle"], suite)
        if result.cancelled:
            raise ABCancelled("A/B cancelled")
        return result

    if rounds > 1:
        suite = suite.with_counts(runs=-(-suite.runs // rounds))
    return spec_ab(factory(candidate, labels[1]), factory(baseline, labels[0]), run_suite, rounds=rounds)


def verdict_lines(ab: ABResult, names: tuple[str, str] = ("without", "with")) -> list[str]:
    """``narrative: net gain — without 40.1 tok/s, with 55.3 tok/s (+37.9 %)`` per prompt; ``names``
    call the sides (baseline, candidate) otherwise, e.g. two profiles' names."""
    out = []
    for prompt, c in ab.verdicts:
        base = f"{c.baseline_mean:.1f}" if c.baseline_mean is not None else "—"
        cand = f"{c.candidate_mean:.1f}" if c.candidate_mean is not None else "—"
        delta = f" ({c.delta_pct:+.1f} %)" if c.delta_pct is not None else ""
        a, b = names
        out.append(f"{prompt}: {_AB_WORDS[c.verdict]} — {a} {base} tok/s, {b} {cand} tok/s wall{delta}")
    return out


def verdict_word(ab: ABResult, prompt: str) -> str:
    """The verdict of one prompt in words ("net gain", "net loss", "within noise", "unknown")."""
    for name, c in ab.verdicts:
        if name == prompt:
            return _AB_WORDS[c.verdict]
    return "unknown"


def ab_to_dict(ab: ABResult, profiles: tuple[str, str] | None = None) -> dict[str, Any]:
    """JSON form: both results and a verdict per prompt; ``profiles`` (baseline, candidate) for an A/B
    of two profiles (kind ``profile_ab``; the sides keep their keys, baseline = ``without_spec``)."""
    pair = {"baseline_profile": profiles[0], "candidate_profile": profiles[1]} if profiles else {}
    return {
        "kind": "profile_ab" if profiles else "spec_decode_ab",
        **pair,
        "verdicts": [
            {"prompt": p, "verdict_text": _AB_WORDS[c.verdict], **c.model_dump(mode="json")}
            for p, c in ab.verdicts
        ],
        "without_spec": ab.without_spec.to_dict(),
        "with_spec": ab.with_spec.to_dict(),
    }
