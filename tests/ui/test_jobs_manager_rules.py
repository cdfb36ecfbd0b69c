"""The jobs manager's rules on real threads (issue 30): a job of a refusing kind on a held resource is
not started and says behind which job; a job on two resources waits for both, first come first run; a
running job's cancel reaches its work; a bug in a queued job still frees the resource for the next."""

from __future__ import annotations

import threading

from llm_dyno.ui.jobs_manager import GPU_POWER, JobsManager, JobState, WhenBusy, server_resource

A, B = server_resource("http://127.0.0.1:1/"), server_resource("http://127.0.0.1:2")


def _held(gate: threading.Event, seen: list[str], name: str):  # type: ignore[no-untyped-def]
    def work(_emit: object, cancel: threading.Event) -> str:
        seen.append(f"{name} started")
        while not gate.wait(0.02):
            if cancel.is_set():
                return f"{name} cancelled"
        return f"{name} done"

    return work


def test_a_refusing_kind_is_not_started_and_says_why(qtbot) -> None:  # type: ignore[no-untyped-def]
    channel = JobsManager().channel()
    gate, seen = threading.Event(), []
    first = channel.submit("benchmark", [A], _held(gate, seen, "bench"), WhenBusy.QUEUE)
    sweep = channel.submit("power-cap sweep", [A, GPU_POWER], _held(gate, seen, "sweep"), WhenBusy.REFUSE)
    assert first.state is JobState.RUNNING and sweep.state is JobState.REFUSED
    assert sweep.reason == (
        "power-cap sweep was not started: benchmark on the server at http://127.0.0.1:1 is running; "
        "wait for it or cancel it"
    )
    with qtbot.waitSignal(channel.finished, timeout=5000) as done:
        gate.set()
    assert done.args == ["bench done"] and seen == ["bench started"] and not channel.busy


def test_a_job_on_two_resources_waits_for_both_first_come_first_run(qtbot) -> None:  # type: ignore[no-untyped-def]
    manager = JobsManager()
    channel = manager.channel()
    gate_a, gate_b, seen = threading.Event(), threading.Event(), []
    ended: list[object] = []
    channel.finished.connect(ended.append)
    channel.submit("bench a", [A], _held(gate_a, seen, "a"), WhenBusy.QUEUE)
    channel.submit("bench b", [B], _held(gate_b, seen, "b"), WhenBusy.QUEUE)
    both = channel.submit("sweep", [A, B], _held(threading.Event(), seen, "both"), WhenBusy.QUEUE)
    later = channel.submit("bench a again", [A], _held(threading.Event(), seen, "later"), WhenBusy.QUEUE)
    assert both.reason == "queued behind bench a on the server at http://127.0.0.1:1"
    assert later.reason == "queued behind bench a on the server at http://127.0.0.1:1"
    gate_a.set()
    qtbot.waitUntil(lambda: ended == ["a done"], timeout=5000)
    assert both.state is JobState.QUEUED and both.reason == f"queued behind bench b on {B}"
    assert later.state is JobState.QUEUED and later.reason == f"queued behind sweep on {A}"  # not ahead of it
    gate_b.set()
    qtbot.waitUntil(lambda: both.state is JobState.RUNNING, timeout=5000)
    assert later.state is JobState.QUEUED
    channel.cancel()  # the queued one withdrawn first, then the running one told
    qtbot.waitUntil(lambda: not channel.busy, timeout=5000)
    assert ended == ["a done", "b done", "both cancelled"] and later.state is JobState.WITHDRAWN
    assert seen == ["a started", "b started", "both started"]


def test_a_job_that_fails_frees_its_resource_for_the_next(qtbot) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.core.errors import DynoError

    channel = JobsManager().channel()
    failures: list[str] = []
    channel.failed.connect(failures.append)
    gate, seen = threading.Event(), []

    def refused(_emit: object, _cancel: threading.Event) -> None:
        gate.wait(5)
        raise DynoError("the server answered 401: give its key")

    channel.submit("benchmark", [A], refused, WhenBusy.QUEUE)
    nxt = channel.submit("load levels", [A], _held(gate, seen, "load"), WhenBusy.QUEUE)
    assert nxt.state is JobState.QUEUED
    with qtbot.waitSignal(channel.finished, timeout=5000) as done:
        gate.set()
    assert failures and "401" in failures[0] and done.args == ["load done"]
