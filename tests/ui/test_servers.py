"""Launch / Stop through the window: lamps, launch panel, failure panel, logs, plan, stop confirmation."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.base import FailureKind, FailureReason, ServerState
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.ui.servers import ServerBridge
from llm_dyno.ui.views.logs_view import SHOW_LINES
from tests.ui.fakes import FakeRuntime

NAME = "cpu-demo"


class _Metrics(http.server.BaseHTTPRequestHandler):
    running = 2

    def do_GET(self) -> None:
        body = (
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{engine="0",model_name="tiny"}} {self.running}\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metrics_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def fake() -> FakeRuntime:
    return FakeRuntime()


@pytest.fixture
def swindow(qtbot, store: ProfileStore, fake: FakeRuntime) -> Iterator:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    bridge = ServerBridge(ServerManager({"process": fake}))
    w = MainWindow(bridge=bridge)
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    w.select_profile(NAME)
    yield w
    w.bridge.shutdown()
    w.editor.set_profile(None)


def _launch(w, qtbot, fake: FakeRuntime):  # type: ignore[no-untyped-def]
    assert w.actions_.launch.isEnabled()
    w.actions_.launch.trigger()
    assert w.profile_list.lamp(NAME) == "loading"
    assert w.current_view() == "dashboard"
    qtbot.waitUntil(lambda: bool(fake.handles), timeout=5000)
    # the window follows the handle (subscribed) before the test drives it
    qtbot.waitUntil(lambda: bool(fake.handles[-1]._status_subs), timeout=5000)
    return fake.handles[-1]


def test_launch_to_ready_updates_lamp_panel_and_actions(swindow, qtbot, fake) -> None:  # type: ignore[no-untyped-def]
    w = swindow
    handle = _launch(w, qtbot, fake)
    panel = w.server_view.launch_panel
    handle.push(ServerState.STARTING, detail="starting vLLM")
    handle.push(ServerState.LOADING_WEIGHTS, detail="Loading safetensors checkpoint shards 1/2", progress=0.5)
    qtbot.waitUntil(lambda: panel.current_step() is ServerState.LOADING_WEIGHTS, timeout=3000)
    assert panel.progress.isVisibleTo(panel) and panel.progress.value() == 500
    assert "shards" in panel.detail.text()
    assert w.profile_list.lamp(NAME) == "loading"
    assert panel.dots[ServerState.STARTING].mode == "done"
    assert not w.actions_.launch.isEnabled() and w.actions_.stop.isEnabled()
    handle.push(ServerState.READY)
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "ready", timeout=3000)
    assert panel.headline.text() == "Serving"
    assert all(
        d.mode == "done" for s, d in panel.dots.items() if s in (ServerState.STARTING, ServerState.READY)
    )
    w.actions_.stop.trigger()  # not READY-with-requests: the fake url has no server, so no question
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "stopped", timeout=5000)
    assert handle.stopped
    qtbot.waitUntil(lambda: w.actions_.launch.isEnabled(), timeout=3000)


def test_failure_panel(swindow, qtbot, fake) -> None:  # type: ignore[no-untyped-def]
    w = swindow
    handle = _launch(w, qtbot, fake)
    handle.push(ServerState.LOADING_WEIGHTS)
    reason = FailureReason(
        FailureKind.CUDA_OOM,
        "CUDA out of memory while loading the weights",
        hint="lower --gpu-memory-utilization or --max-model-len",
        excerpt=("ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB",),
        exit_code=1,
    )
    handle.push(ServerState.FAILED, failure=reason)
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "failed", timeout=3000)
    fp = w.server_view.failure_panel
    assert fp.isVisibleTo(w.server_view)
    assert "out of memory" in fp.summary.text()
    assert "gpu-memory-utilization" in fp.hint.text()
    assert "Tried to allocate" in fp.excerpt.toPlainText()
    assert fp.exit_code.text() == "Exit code 1"
    assert w.server_view.launch_panel.dots[ServerState.LOADING_WEIGHTS].mode == "failed"
    qtbot.waitUntil(lambda: w.actions_.launch.isEnabled(), timeout=3000)  # once the launch job has ended


def test_logs_view_bounded_filter_search(swindow, qtbot, fake) -> None:  # type: ignore[no-untyped-def]
    w = swindow
    handle = _launch(w, qtbot, fake)
    w.show_view("logs")
    logs = w.logs_view
    n = 100_000

    def feed() -> None:
        for i in range(n):
            if i % 1000 == 999:
                handle.logs.append(f"WARNING 05-03 18:41:34 [x.py:1] slow step {i}")
            elif i == n - 10:
                handle.logs.append("ERROR 05-03 18:41:35 [core.py:9] Engine core initialization failed")
            else:
                handle.logs.append(f"INFO 05-03 18:41:34 [x.py:1] line {i}")

    started = time.monotonic()
    t = threading.Thread(target=feed)
    t.start()
    t.join()
    qtbot.waitUntil(lambda: logs.count.text() == f"{SHOW_LINES:,} of {n:,} lines", timeout=30000)
    assert time.monotonic() - started < 30
    assert logs.text.blockCount() <= SHOW_LINES
    logs.level.setCurrentText("ERROR only")
    assert logs.lines() == ["ERROR 05-03 18:41:35 [core.py:9] Engine core initialization failed"]
    logs.level.setCurrentText("WARNING and above")
    assert len(logs.lines()) == n // 1000 + 1
    logs.search.setText("initialization failed")
    assert logs.find_next()
    assert not logs.follow.isChecked()  # searching stops following
    logs.copy()


def test_plan_button(swindow, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = swindow
    assert w.actions_.plan.isEnabled()
    w.actions_.plan.trigger()
    qtbot.waitUntil(lambda: w.servers.last_plan is not None, timeout=5000)
    name, text = w.servers.last_plan
    assert name == NAME and "serve" in text


def test_stop_asks_when_serving_requests(qtbot, store, metrics_url) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    fake = FakeRuntime(metrics_url)
    w = MainWindow(bridge=ServerBridge(ServerManager({"process": fake})))
    w.interactive = False
    qtbot.addWidget(w)
    w.show()
    w.select_profile(NAME)
    asked: list[int | None] = []
    answers = [False, True]

    def confirm(name: str, running: int | None) -> bool:
        asked.append(running)
        return answers.pop(0)

    w.servers.confirm_stop = confirm  # type: ignore[method-assign]
    handle = _launch(w, qtbot, fake)
    handle.push(ServerState.READY)
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "ready", timeout=3000)
    w.actions_.stop.trigger()
    qtbot.waitUntil(lambda: asked == [2], timeout=5000)
    qtbot.waitUntil(lambda: w.actions_.stop.isEnabled(), timeout=3000)
    assert not handle.stopped  # the user said no
    w.actions_.stop.trigger()
    qtbot.waitUntil(lambda: handle.stopped, timeout=5000)
    assert asked == [2, 2]
    w.bridge.shutdown()


def test_launch_refused_shows_error(swindow, qtbot, fake) -> None:  # type: ignore[no-untyped-def]
    w = swindow
    handle = _launch(w, qtbot, fake)
    handle.push(ServerState.READY)
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "ready", timeout=3000)
    # the first launch's worker holds the profile's launch lock until the server exists: a second
    # launch before it lets go is refused as "being launched", which is another test
    qtbot.waitUntil(lambda: not w.bridge.is_busy(NAME), timeout=5000)
    # a second launch of the same profile is refused by the manager's checks
    w.bridge.launch(w.session.get(NAME))
    qtbot.waitUntil(lambda: "already running" in w.statusBar().currentMessage(), timeout=15000)
    assert w.profile_list.lamp(NAME) == "ready"  # refused because it runs: it still does


@pytest.mark.vllm
def test_real_server_launch_and_stop(
    qtbot, store, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow
    from tests.support import vllm_env

    env = vllm_env.server_env(vllm_cache)
    args = [*vllm_env.FAST_ARGS, "--served-model-name", "tiny", "--max-model-len", "1024"]
    args += ["--port", str(vllm_env.free_port())]
    profile = Profile(
        name="tiny-gui",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        args=tuple(args),
        env=env,
    )
    store.save(profile)
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.show()
    w.select_profile("tiny-gui")
    try:
        w.actions_.launch.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp("tiny-gui") in ("ready", "failed"), timeout=240_000)
        assert w.profile_list.lamp("tiny-gui") == "ready", w.logs_view.text.toPlainText()[-3000:]
        assert w.server_view.launch_panel.headline.text() == "Serving"
        qtbot.waitUntil(
            lambda: "Application startup complete" in w.logs_view.text.toPlainText(), timeout=10_000
        )
        # the memory estimate beside vLLM's own "CPU KV cache size" (exact on CPU: VLLM_CPU_KVCACHE_SPACE=1)
        dash = w.server_view.dashboards["profile:tiny-gui"]
        want = "KV cache: vLLM 1,048,576 tokens · estimate 1,048,576 (100.0% of the estimate)"
        qtbot.waitUntil(lambda: dash.kv_note.text() == want, timeout=10_000)
        assert w.server_view.launch_panel.kv_compare.text() == want
        w.actions_.stop.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp("tiny-gui") == "stopped", timeout=60_000)
    finally:  # a failed check leaves no server running (its 2 GB would slow every later test)
        w.bridge.shutdown()
        if any(h.profile_name == "tiny-gui" for h in w.bridge.manager.live()):
            w.bridge.manager.stop("tiny-gui", timeout=60)


def test_the_benchmark_views_launch_and_the_ab_tabs_stop_buttons_fix_what_they_say(  # type: ignore[no-untyped-def]
    swindow, qtbot, fake, store: ProfileStore
) -> None:
    """ "Not running: Launch it" and "running: stop it first" each come with the button that does it."""
    from PySide6.QtCore import Qt

    w = swindow
    store.save(
        Profile(
            name="ab-gui",
            runtime=Runtime.PROCESS,
            process=ProcessSettings(executable="vllm"),
            model="org/m",
            args=("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'),
        )
    )
    qtbot.waitUntil(lambda: w.session.get("ab-gui") is not None, timeout=5000)
    w.select_profile("ab-gui")
    w.show_view("benchmark")
    view = w.bench_view
    assert view.target_label.text() == "“ab-gui” is not running: Launch it, or attach to a URL."
    assert view.launch_button.isVisible() and not view.run_button.isEnabled()
    qtbot.mouseClick(view.launch_button, Qt.MouseButton.LeftButton)
    assert w.profile_list.lamp("ab-gui") == "loading"  # launched as the toolbar's Launch does
    qtbot.waitUntil(lambda: bool(fake.handles), timeout=5000)
    handle = fake.handles[-1]
    qtbot.waitUntil(lambda: bool(handle._status_subs), timeout=5000)
    handle.push(ServerState.READY)
    qtbot.waitUntil(lambda: w.profile_list.lamp("ab-gui") == "ready", timeout=5000)
    w.show_view("benchmark")
    qtbot.waitUntil(lambda: view.run_button.isEnabled(), timeout=5000)
    assert not view.launch_button.isVisible()
    # the A/B launches the profile itself: while it runs, the tab says so once, beside its Stop button
    view.tabs.setCurrentWidget(view.ab)
    ab = view.ab
    assert not ab.run_button.isEnabled()
    assert ab.status.text() == "“ab-gui” is running: the A/B launches it twice itself, so stop it first."
    assert ab.stop_button.isVisible() and ab.stop_button.text() == "Stop “ab-gui”"
    qtbot.mouseClick(ab.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: handle.stopped, timeout=5000)
    handle.push(ServerState.STOPPED)
    qtbot.waitUntil(lambda: ab.run_button.isEnabled(), timeout=5000)
    assert not ab.stop_button.isVisible()
    assert ab.status.text() == "Ready to A/B “ab-gui”."


def test_phases_shown_are_the_ones_this_server_goes_through(swindow, qtbot, fake) -> None:  # type: ignore[no-untyped-def]
    """cpu-demo runs with --enforce-eager as a process: no pull, no compile, no CUDA graphs; once ready
    the steps never reached vanish; a stopped server shows no empty circles and no 0:00."""
    w = swindow
    handle = _launch(w, qtbot, fake)
    panel = w.server_view.launch_panel
    handle.push(ServerState.STARTING, detail="starting vLLM")
    qtbot.waitUntil(lambda: panel.current_step() is ServerState.STARTING, timeout=3000)
    shown = [s for s, label in panel.labels.items() if label.isVisibleTo(panel)]
    assert shown == [ServerState.STARTING, ServerState.LOADING_WEIGHTS, ServerState.READY]
    handle.push(ServerState.READY)
    qtbot.waitUntil(lambda: panel.headline.text() == "Serving", timeout=3000)
    w.actions_.stop.trigger()
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "stopped", timeout=5000)
    qtbot.waitUntil(
        lambda: panel.status is not None and panel.status.state is ServerState.STOPPED, timeout=3000
    )
    assert panel.headline.text() == "Stopped"
    assert not any(d.isVisibleTo(panel) for d in panel.dots.values())
    assert not panel.elapsed.isVisibleTo(panel)


def test_a_refused_launch_clears_is_starting(qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    """The real process runtime refuses cpu-demo before setup (no model folder): the status bar says
    why, instead of "is starting…"."""
    from llm_dyno.ui.main_window import MainWindow

    demo = store.get(NAME)  # as shipped, but its model surely missing (~/.cache may hold a built one)
    store.save(demo.with_changes(model=str(store.folder.parent / "no-model-here")))
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.show()
    w.select_profile(NAME)
    errors: list[str] = []
    w.show_error = errors.append  # type: ignore[method-assign]
    w.actions_.launch.trigger()
    qtbot.waitUntil(lambda: bool(errors), timeout=10_000)
    message = w.statusBar().currentMessage()
    assert "is starting" not in message and message.startswith("“cpu-demo” did not start")
    assert "the model folder" in message and "does not exist" in errors[0]
    assert w.actions_.launch.isEnabled()
    w.bridge.shutdown()
    w.editor.set_profile(None)
