"""Issue 31 in the window: the GPU budget a launch passed shows in the launch panel, the Plan shows
the budget beside the servers running, and a launch that does not fit is refused with a message that
names who holds the GPU and what would make it fit. The servers are stand-in ``vllm serve`` processes
(tests/support/standin_vllm.py) run by the real process runtime; this machine has no NVIDIA driver,
so the budget is the records' alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from tests.support.standin_vllm import write_standin
from tests.support.vllm_env import free_port


def _profile(name: str, exe: Path, util: float) -> Profile:
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model="org/tiny",
        args=("--port", str(free_port()), "--gpu-memory-utilization", str(util)),
        gpus=(0,),
    )


@pytest.fixture
def rig(qtbot, store: ProfileStore, tmp_path: Path) -> Iterator:  # type: ignore[no-untyped-def]
    from llm_dyno.ui.main_window import MainWindow

    exe = write_standin(tmp_path)
    store.save(_profile("alpha", exe, 0.6))
    store.save(_profile("beta", exe, 0.6))
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    yield w
    w.bridge.manager.stop_all(timeout=10)
    w.bridge.shutdown()
    w.editor.set_profile(None)


def test_budget_in_launch_panel_plan_and_refusal(rig, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = rig
    w.select_profile("alpha")
    w.actions_.launch.trigger()
    panel = w.server_view.launch_panel
    # shown in the launch panel (which gives way to the dashboard once the server is ready: on a busy
    # machine the first state seen may already be ready, so the label's own visibility is what counts)
    qtbot.waitUntil(lambda: not panel.budget.isHidden(), timeout=20000)
    assert panel.budget.text() == (
        "GPU budget: GPU 0: this one 0.60 of the GPU; 0.40 of the GPU free after "
        "(live memory unknown: from the records)"
    )
    qtbot.waitUntil(lambda: w.profile_list.lamp("alpha") == "ready", timeout=20000)

    w.select_profile("beta")
    w.servers.last_plan = None
    w.actions_.plan.trigger()
    qtbot.waitUntil(lambda: w.servers.last_plan is not None, timeout=10000)
    name, text = w.servers.last_plan
    assert name == "beta" and "# GPU budget" in text and "'alpha' (ready)" in text and "does not fit" in text

    w.actions_.launch.trigger()
    message = w.statusBar().currentMessage
    qtbot.waitUntil(lambda: "cannot launch 'beta'" in message(), timeout=20000)
    shown = message()
    assert "GPU 0: 'alpha' holds 0.60 of the GPU" in shown
    assert (
        "it fits once 'alpha' is stopped or asleep, or once its GPU memory utilization is 0.40 or less"
        in shown
    )
    assert "llm-dyno" not in shown  # the window's words, not a command line
    assert w.bridge.manager.get("beta") is None  # nothing started
    assert w.profile_list.lamp("beta") != "ready"
