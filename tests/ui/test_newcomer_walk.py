"""A newcomer's first look at the window on the CPU demo, at 1280×800: the Welcome dialog shows each
example's first sentence whole; every empty table of the Benchmark view says what will be there and
every empty chart says so instead of drawing placeholder 0…1 axes; the sweep says why it cannot run on
a profile without a GPU. Driven through the window: the dialog's button, the sidebar, the tabs."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QPushButton, QTableWidget

from llm_dyno.ui.bench.bench_view import NO_GPU_SWEEP
from llm_dyno.ui.messages import speaks_cli
from tests.ui.clicks import click_page, click_profile, click_view, grab


def test_welcome_shows_each_example_in_whole_sentences(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtTest import QTest

    from llm_dyno.ui.dialogs.first_run import FirstRunDialog
    from llm_dyno.ui.main_window import MainWindow, schedule_first_run

    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    seen: list[list[str]] = []

    def answer() -> None:  # the modal dialog, as the user sees it: read it, then click Add
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, FirstRunDialog):
            QTimer.singleShot(50, answer)
            return
        seen.append([lab.text() for lab in dialog.findChildren(QLabel) if lab.objectName() == "fieldHelp"])
        grab(dialog, "welcome")
        add = next(b for b in dialog.findChildren(QPushButton) if b.text() == "Add selected profiles")
        QTest.mouseClick(add, Qt.MouseButton.LeftButton)

    QTimer.singleShot(50, answer)
    schedule_first_run(w)
    qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
    qtbot.waitUntil(lambda: "cpu-demo" in w.profile_list.names(), timeout=10_000)
    details = seen[0]
    assert len(details) == 3
    for text in details:
        assert text.endswith((".", "!", "?")), text  # a whole sentence, never "… (no MTP): the"
    assert any("spec-decode-off side of an A/B." in t for t in details)
    w.editor.set_profile(None)


def test_benchmark_view_of_the_cpu_demo_has_no_bare_table_or_axes(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    click_profile(window, "cpu-demo")
    click_view(window, "Benchmark")
    bench = window.bench_view
    charts = {"Run": bench.result_panel.chart, "Sweep": bench.sweep.chart, "Load": bench.levels.chart}
    for i in range(bench.tabs.count()):
        label = bench.tabs.tabText(i)
        click_page(bench.tabs, label)
        qtbot.wait(100)
        page = bench.tabs.widget(i)
        for table in page.findChildren(QTableWidget):
            if table.rowCount() or not table.isVisible():
                continue
            notes = [n for n in table.viewport().findChildren(QLabel) if n.objectName() == "emptyTableNote"]
            assert notes and notes[0].isVisible() and notes[0].text(), (label, table)
            assert not speaks_cli(notes[0].text())
        chart = charts.get(label)
        if chart is not None:
            assert chart.empty_text and not chart.getPlotItem().getAxis("left").isVisible(), label
        grab(window, f"bench-{label.replace('/', '')}-empty")
    assert bench.sweep.reason.text() == NO_GPU_SWEEP and not bench.sweep.run_button.isEnabled()


def test_the_first_window_shows_no_terminal_markup(window) -> None:  # type: ignore[no-untyped-def]
    """A fresh install opens on "No profile selected": its text is plain words (it showed `docker run`
    with Markdown's backticks) and names no command line."""
    shown = [label.text() for label in window.editor.empty.findChildren(QLabel)]
    assert any("No profile selected" in t for t in shown), shown
    assert all("`" not in t and not speaks_cli(t) for t in shown), shown
