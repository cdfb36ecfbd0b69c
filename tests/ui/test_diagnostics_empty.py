"""Diagnostics with nothing to report says what was looked at ("N rules looked at …: nothing to
report") instead of an empty list, and for each missing input the button in the window that makes one:
Launch for a launch log, Open Benchmark for a benchmark. Driven through the window on the CPU demo."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from llm_dyno.ui.messages import speaks_cli
from tests.ui.clicks import click_profile, click_view, grab

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "vllm_cpu_demo_serving.log"


def _diagnosed(qtbot, window):  # type: ignore[no-untyped-def]
    click_profile(window, "cpu-demo")
    click_view(window, "Diagnostics")
    view = window.diagnostics_view
    qtbot.waitUntil(lambda: view.gathered is not None, timeout=10_000)
    return view


def test_no_finding_says_what_was_checked_and_what_to_do(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    view = _diagnosed(qtbot, window)
    d = view.gathered.diagnosis
    assert d.findings == () and len(d.checked) > 3
    empty = view.no_findings
    assert view.findings_stack.currentWidget() is empty and empty.isVisible()
    assert empty.summary.text() == f"{len(d.checked)} rules looked at the profile: nothing to report."
    missing = empty.missing.text()
    assert "No launch log of “cpu-demo” yet: Launch it" in missing and "No benchmark yet" in missing
    assert not speaks_cli(missing) and not speaks_cli(empty.summary.text())
    assert empty.launch_button.isVisible() and empty.launch_button.text() == "Launch “cpu-demo”"
    assert empty.bench_button.isVisible()
    qtbot.wait(100)
    # the right pane's tabs show whole at 1280 px: no scroll arrows, no name cut
    assert view.tabs.tabBar().sizeHint().width() <= view.tabs.width(), view.tabs.width()
    grab(window, "diagnostics-cpu-demo-nothing")
    qtbot.mouseClick(empty.bench_button, Qt.MouseButton.LeftButton)
    assert window.stack.currentWidget() is window.views.page("benchmark")


def test_a_read_log_is_named_and_its_button_goes(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    view = _diagnosed(qtbot, window)
    before = view.gathered
    view.set_log(LOG)  # what "Choose log…" does with the file picked
    qtbot.waitUntil(lambda: view.gathered is not before, timeout=10_000)
    d = view.gathered.diagnosis
    assert d.findings == ()  # the CPU demo's own log: its --enforce-eager is on purpose, not a finding
    empty = view.no_findings
    assert empty.summary.text() == (
        f"{len(d.checked)} rules looked at the profile and the launch log: nothing to report."
    )
    assert "launch log" not in empty.missing.text() and "No benchmark yet" in empty.missing.text()
    assert not empty.launch_button.isVisible() and empty.bench_button.isVisible()
