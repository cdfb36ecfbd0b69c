"""The window's jobs manager driven through the Benchmark view with QTest (issue 30): two benchmarks on
one server queue (the second says behind which job), on two servers they run together, a queued job is
cancelled before it starts, and closing the window cancels what runs and leaves no thread behind.

The servers are recorded vLLM streams held at a gate (tests/support/gated_stream_server.py), so the jobs
overlap for as long as the test needs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.telemetry import power
from llm_dyno.core.telemetry.nvml import NvmlUnavailable
from llm_dyno.ui.bench.bench_view import BenchmarkView
from llm_dyno.ui.jobs_manager import JobState, WhenBusy, server_resource
from tests.support.gated_stream_server import GatedStreamServer

SUITE = (
    "name: gated\nwarmups: 0\nruns: 1\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 24,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)
CLICK = Qt.MouseButton.LeftButton


@pytest.fixture
def no_power(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(_gpu: int = 0) -> None:
        raise NvmlUnavailable("NVIDIA driver not found (libnvidia-ml.so.1 missing)")

    monkeypatch.setattr(power, "read_power_limit", unavailable)


@pytest.fixture
def view(qtbot, ui_home: Path, no_power: None) -> BenchmarkView:  # type: ignore[no-untyped-def]
    suites = ui_home / "data" / "suites"
    suites.mkdir(parents=True, exist_ok=True)
    (suites / "gated.yaml").write_text(SUITE)
    v = BenchmarkView()
    qtbot.addWidget(v)
    v.show()  # the Queue button is shown only while the target's server is busy
    v.suite_combo.setCurrentText("gated")
    return v


@pytest.fixture
def servers() -> Iterator[tuple[GatedStreamServer, GatedStreamServer]]:
    with GatedStreamServer() as a, GatedStreamServer() as b:
        yield a, b
        a.release.set()
        b.release.set()


def _attach(v: BenchmarkView, url: str) -> None:
    v.url_edit.clear()
    QTest.keyClicks(v.url_edit, url)
    v.model_edit.clear()
    QTest.keyClicks(v.model_edit, "tiny")


def _stored() -> list[str]:
    with HistoryStore() as store:
        return [e.suite for e in store.list()]


def test_two_benchmarks_on_one_server_queue(qtbot, view: BenchmarkView, servers) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    _attach(view, a.url)
    QTest.mouseClick(view.run_button, CLICK)
    qtbot.waitUntil(lambda: a.in_flight == 1, timeout=20_000)
    assert not view.run_button.isEnabled() and view.queue_button.isVisible()
    QTest.mouseClick(view.queue_button, CLICK)
    first, second = view.jobs.jobs
    assert (first.state, second.state) == (JobState.RUNNING, JobState.QUEUED)
    behind = f"queued behind benchmark gated on {server_resource(a.url)}"
    assert second.reason == behind and behind in view.status.text()
    finished: list[str] = []
    view.benchmark_finished.connect(finished.append)
    a.release.set()
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=60_000)
    assert all("done" in f for f in finished), finished
    assert a.posts == 2 and a.max_in_flight == 1  # one after the other, never together
    assert _stored() == ["gated", "gated"]
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled()
    assert not view.queue_button.isVisible()


def test_benchmarks_on_two_servers_run_together(qtbot, view: BenchmarkView, servers) -> None:  # type: ignore[no-untyped-def]
    a, b = servers
    _attach(view, a.url)
    QTest.mouseClick(view.run_button, CLICK)
    _attach(view, b.url)
    assert view.run_button.isEnabled() and not view.queue_button.isVisible()  # b is free
    QTest.mouseClick(view.run_button, CLICK)
    qtbot.waitUntil(lambda: a.in_flight == 1 and b.in_flight == 1, timeout=20_000)  # both at once
    assert [j.state for j in view.jobs.jobs] == [JobState.RUNNING, JobState.RUNNING]
    finished: list[str] = []
    view.benchmark_finished.connect(finished.append)
    a.release.set()
    b.release.set()
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=60_000)
    assert all("done" in f for f in finished), finished
    assert (a.posts, b.posts) == (1, 1) and not view.jobs.jobs


def test_a_queued_job_is_cancelled_before_it_starts(qtbot, view: BenchmarkView, servers) -> None:  # type: ignore[no-untyped-def]
    a, _ = servers
    _attach(view, a.url)
    QTest.mouseClick(view.run_button, CLICK)
    qtbot.waitUntil(lambda: a.in_flight == 1, timeout=20_000)
    levels = view.levels
    view.tabs.setCurrentWidget(levels)
    levels.concurrency_edit.setText("1")
    QTest.mouseClick(levels.run_button, CLICK)  # the same server: load levels wait their turn
    assert "Load levels queued behind benchmark gated" in levels.status.text()
    assert levels.busy and levels.cancel_button.isEnabled()
    QTest.mouseClick(levels.cancel_button, CLICK)
    assert not levels.busy and "load levels cancelled before it started" in levels.status.text()
    assert [j.name for j in view.jobs.jobs] == ["benchmark gated"]  # the benchmark goes on
    with qtbot.waitSignal(view.benchmark_finished, timeout=60_000) as done:
        a.release.set()
    assert "done" in done.args[0]
    qtbot.wait(300)  # time for a wrongly started queued job to reach the server
    assert a.posts == 1 and levels.result is None
    with HistoryStore() as store:
        assert store.list(kind="load") == []


def test_closing_the_window_cancels_the_running_job_and_waits_for_it(qtbot, ui_home: Path, servers) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    suites = ui_home / "data" / "suites"
    suites.mkdir(parents=True, exist_ok=True)
    (suites / "gated.yaml").write_text(SUITE)
    a, b = servers
    w = MainWindow()
    qtbot.addWidget(w)
    w.interactive = False
    w.show()
    w.show_view("benchmark")
    v = w.bench_view
    v.suite_combo.setCurrentText("gated")
    _attach(v, a.url)
    QTest.mouseClick(v.run_button, CLICK)
    QTest.mouseClick(v.queue_button, CLICK)  # a second one queued behind it
    _attach(v, b.url)
    QTest.mouseClick(v.run_button, CLICK)
    qtbot.waitUntil(lambda: a.in_flight == 1 and b.in_flight == 1, timeout=20_000)
    threads = [j.thread for j in w.jobs.jobs if j.thread is not None]
    assert len(threads) == 2 and len(w.jobs.jobs) == 3
    assert w.close()  # the servers never release: only the cancel ends the jobs
    assert not any(t.is_alive() for t in threads)
    assert not [t for t in threading.enumerate() if t in threads]
    assert a.posts == 1 and b.posts == 1  # the queued one never started
    # the manager is closed: a job handed to it now is refused with the reason, not left to run
    job = v.worker.submit("benchmark gated", [server_resource(a.url)], lambda _e, _c: None, WhenBusy.QUEUE)
    assert job.state is JobState.REFUSED and "the window is closing" in (job.reason or "")
