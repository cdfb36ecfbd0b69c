"""The window launches a profile whose server port has no host port (``ports: ["8000"]``): it comes up
(readiness checked on the port Docker picked) and the launch panel shows that port. Real Docker engine,
the window driven with QTest (issue 23)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.profiles.store import ProfileStore
from tests.support.images import TINY_IMAGE

pytestmark = pytest.mark.docker


def test_window_shows_the_port_docker_picked(
    qtbot, store: ProfileStore, docker_client: Any, test_images: None
) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    name = f"wt23win{uuid.uuid4().hex[:6]}"
    store.save(
        Profile(
            name=name,
            model="tiny",
            args=("--port", "8000"),
            docker=DockerSettings(image=TINY_IMAGE, ports=("8000",), volumes=("/usr:/usr:ro",)),
        )
    )
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.show()
    try:
        w.select_profile(name)
        w.actions_.launch.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp(name) in ("ready", "failed"), timeout=60_000)
        assert w.profile_list.lamp(name) == "ready", w.logs_view.text.toPlainText()[-2000:]
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})
        picked = int(found.attrs["NetworkSettings"]["Ports"]["8000/tcp"][0]["HostPort"])
        url = f"http://127.0.0.1:{picked}"
        qtbot.waitUntil(lambda: w.server_view.launch_panel.url.text() == url, timeout=5_000)
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        w.actions_.stop.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp(name) == "stopped", timeout=60_000)
    finally:
        w.bridge.shutdown()
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)
