"""The window launches a profile with compose ``pre_start`` hooks (init containers run before the
server's container): with hooks that succeed the server comes up and the Logs tab shows their output;
with one that exits 17 the launch fails, the failure card names ``pre_start[1]`` and its status with the
hook's output, and no container is left. Real Docker engine, the window driven with QTest (issue 23)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.profiles.model import DockerSettings, InitHook, Profile
from llm_dyno.core.profiles.store import ProfileStore
from tests.conftest_docker import free_port
from tests.support.images import PLAIN_IMAGE

pytestmark = pytest.mark.docker


def _profile(name: str, out: Path, last: str) -> Profile:
    hooks = (
        InitHook(command=("sh", "-c", "echo A >> /out/order.txt")),  # the server's image
        InitHook(image=PLAIN_IMAGE, command=("sh", "-c", f"echo B >> /out/order.txt; {last}")),
    )
    return Profile(
        name=name,
        model="tiny",
        args=("--port", "8000"),
        docker=DockerSettings(
            image=PLAIN_IMAGE,
            entrypoint=("/usr/bin/python3", "-u", "/dyno/fake_vllm.py"),
            ports=(f"{free_port()}:8000",),
            volumes=("/usr:/usr:ro", f"{out}:/out"),
            pre_start=hooks,
        ),
    )


def _left(docker_client: Any, name: str) -> list[Any]:
    mine = docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"})
    hooks = docker_client.containers.list(
        all=True, filters={"label": f"llm-dyno.pre-start-of=llm-dyno-{name}"}
    )
    return mine + hooks


def test_window_runs_pre_start_hooks_and_says_which_one_failed(
    qtbot, tmp_path: Path, store: ProfileStore, docker_client: Any, test_images: None
) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    tag = uuid.uuid4().hex[:6]
    good, bad = f"wt23pre{tag}", f"wt23prebad{tag}"
    (tmp_path / good).mkdir()
    (tmp_path / bad).mkdir()
    store.save(_profile(good, tmp_path / good, "echo hook-two-says-hi"))
    store.save(_profile(bad, tmp_path / bad, "echo about-to-fail; exit 17"))
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.show()
    try:
        w.select_profile(good)
        w.actions_.launch.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp(good) in ("ready", "failed"), timeout=60_000)
        log = w.logs_view.text.toPlainText()
        assert w.profile_list.lamp(good) == "ready", log[-2000:]
        assert "[pre_start] hook-two-says-hi" in log and "pre_start[1] exited with status 0" in log
        assert (tmp_path / good / "order.txt").read_text() == "A\nB\n"
        w.actions_.stop.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp(good) == "stopped", timeout=60_000)

        w.select_profile(bad)
        w.actions_.launch.trigger()
        qtbot.waitUntil(lambda: w.profile_list.lamp(bad) == "failed", timeout=60_000)
        card = w.server_view.failure_panel
        qtbot.waitUntil(card.isVisible, timeout=5_000)
        assert "pre_start[1] exited with status 17" in card.summary.text(), card.summary.text()
        assert "[pre_start] about-to-fail" in card.excerpt.toPlainText()
        assert (tmp_path / bad / "order.txt").read_text() == "A\nB\n"  # both ran, the second failed
        assert _left(docker_client, bad) == []
    finally:
        w.bridge.shutdown()
        for name in (good, bad):
            for c in _left(docker_client, name):
                c.remove(force=True)
