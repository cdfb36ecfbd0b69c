"""The Sweep tab's caps field: what the user types is checked where it is typed, in words."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from llm_dyno.ui.bench.sweep_panel import SweepPanel


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("230, abc", "caps must be numbers in watts, got '230, abc'"),
        ("", "enter caps in watts, e.g. 230, 260, 290, 330"),
        ("-5", "caps must be positive"),
    ],
)
def test_bad_caps_are_said_under_the_field_and_nothing_starts(qtbot, typed: str, said: str) -> None:  # type: ignore[no-untyped-def]
    panel = SweepPanel()
    qtbot.addWidget(panel)
    panel.show()
    asked: list[list[float]] = []
    panel.sweepRequested.connect(asked.append)
    panel.caps.clear()
    qtbot.keyClicks(panel.caps, typed)
    qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)  # was a RecursionError
    assert panel.reason.text() == said and panel.reason.isVisible()
    assert asked == []
    panel.caps.clear()
    qtbot.keyClicks(panel.caps, "230 260W")
    qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    assert asked == [[230.0, 260.0]]
