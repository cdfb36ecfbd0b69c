"""Sleep, Wake and the idle timeout in the window, driven with QTest: profiles launched through the
window's ServerManager run a stand-in ``vllm serve`` that answers vLLM 0.32.0's sleep endpoints
(tests/support/sleep_replay_server.py; vLLM for CPU has no sleep mode, so this ran only that way)."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import httpx
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.profiles.model import IdleTimeout, ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.ui.servers import ServerBridge
from tests.support import vllm_env

REPLAY = Path(__file__).resolve().parents[1] / "support" / "sleep_replay_server.py"


def stand_in_profile(tmp_path: Path, name: str, port: int, **extra: object) -> Profile:
    exe = tmp_path / f"vllm-{name}"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(REPLAY)!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model=str(tmp_path),
        args=("--port", str(port)),
        sleep_mode=True,
        **extra,  # type: ignore[arg-type]
    )


def state_cell(view, name: str) -> str:  # type: ignore[no-untyped-def]
    for row in range(view.table.rowCount()):
        item = view.table.item(row, 0)
        if item is not None and item.text() == name:
            state = view.table.item(row, 3)
            return state.text() if state is not None else ""
    return ""


def launched(qtbot, window, name: str) -> None:  # type: ignore[no-untyped-def]
    window.select_profile(name)
    window.actions_.launch.trigger()
    qtbot.waitUntil(lambda: window.bridge.status(name) is not None, timeout=10_000)
    qtbot.waitUntil(lambda: window.bridge.status(name).state.value == "ready", timeout=30_000)


def make_window(qtbot):  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    window = MainWindow(bridge=ServerBridge(ServerManager()))
    window.interactive = False
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    return window


def test_sleep_level_2_and_wake_from_the_servers_overview(qtbot, ui_home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    port = vllm_env.free_port()
    ProfileStore().save(stand_in_profile(tmp_path, "sleeper", port))
    window = make_window(qtbot)
    try:
        launched(qtbot, window, "sleeper")
        window.show_view("servers")
        view = window.servers_view
        qtbot.waitUntil(lambda: state_cell(view, "sleeper") == "ready", timeout=10_000)
        controls = view.sleep_controls
        qtbot.waitUntil(controls.sleep_button.isEnabled, timeout=5_000)
        assert not controls.wake_button.isEnabled()
        controls.level.setCurrentIndex(1)  # level 2
        QTest.mouseClick(controls.sleep_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: state_cell(view, "sleeper") == "sleeping (level 2)", timeout=15_000)
        assert "GPU memory freed: unknown" in controls.outcome.text()
        dash = window.server_view.dashboards["profile:sleeper"]  # the dashboard's state line says so too
        qtbot.waitUntil(lambda: dash.state.text().endswith(" · sleeping (level 2)"), timeout=10_000)
        assert httpx.get(f"http://127.0.0.1:{port}/is_sleeping", timeout=5).json() == {"is_sleeping": True}
        qtbot.waitUntil(controls.wake_button.isEnabled, timeout=5_000)
        QTest.mouseClick(controls.wake_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: state_cell(view, "sleeper") == "ready", timeout=15_000)
        assert re.search(r"awake in \d+\.\d\d s", controls.outcome.text()), controls.outcome.text()
        qtbot.waitUntil(lambda: dash.state.text() == f"http://127.0.0.1:{port}", timeout=10_000)
        log = Path(window.bridge.handle("sleeper").log_path).read_text()
        assert re.findall(r"replay-call: (POST \S+)", log) == [
            "POST /sleep?level=2&mode=wait",
            "POST /wake_up?tags=weights",
            "POST /collective_rpc",
            "POST /wake_up?tags=kv_cache",
        ]
    finally:
        handle = window.bridge.handle("sleeper")
        if handle is not None:
            handle.stop(10)
        window.bridge.shutdown()


def test_the_window_s_idle_timer_sleeps_a_still_server_never_one_serving(  # type: ignore[no-untyped-def]
    qtbot, ui_home: Path, tmp_path: Path
) -> None:
    port = vllm_env.free_port()
    idle = IdleTimeout(minutes=4 / 60, action="sleep")  # 4 s
    ProfileStore().save(stand_in_profile(tmp_path, "napper", port, idle_timeout=idle))
    window = make_window(qtbot)
    url = f"http://127.0.0.1:{port}"
    try:
        launched(qtbot, window, "napper")
        answers: list[int] = []

        def serve() -> None:  # two requests of 4 s back to back: 8 s of work, twice the timeout
            for _ in range(2):
                body = {"model": "tiny", "prompt": "hi", "max_tokens": 80}
                answers.append(httpx.post(f"{url}/v1/completions", json=body, timeout=60).status_code)

        worker = threading.Thread(target=serve, daemon=True)
        worker.start()
        window.show_view("servers")
        view = window.servers_view
        qtbot.waitUntil(
            lambda: "idle timer: 1 request in flight" in state_cell(view, "napper"), timeout=10_000
        )
        while worker.is_alive():
            qtbot.wait(200)
            assert httpx.get(f"{url}/is_sleeping", timeout=5).json() == {"is_sleeping": False}
        finished = time.monotonic()
        assert answers == [200, 200]  # none was cut
        qtbot.waitUntil(lambda: state_cell(view, "napper").startswith("sleeping (level 1)"), timeout=20_000)
        assert time.monotonic() - finished >= 3.0  # counted from the last request
        assert httpx.get(f"{url}/is_sleeping", timeout=5).json() == {"is_sleeping": True}
    finally:
        handle = window.bridge.handle("napper")
        if handle is not None:
            handle.stop(10)
        window.bridge.shutdown()
