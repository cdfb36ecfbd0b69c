"""The dashboard's plots as a user sees them: an empty state instead of bare 0.1–0.9 axes, GPU
utilisation and temperature on their own axes, event labels inside the plot at the live edge."""

from __future__ import annotations

import numpy as np

from llm_dyno.ui.dashboard.plots import PlotGrid


def shown_grid(qtbot) -> PlotGrid:  # type: ignore[no-untyped-def]
    grid = PlotGrid()
    qtbot.addWidget(grid)
    grid.resize(1000, 800)
    grid.show()
    qtbot.waitExposed(grid)
    grid.set_x_range(1000.0, 1100.0)
    grid.refresh()
    return grid


def test_a_plot_without_data_says_so_and_shows_no_meaningless_ticks(qtbot) -> None:  # type: ignore[no-untyped-def]
    grid = shown_grid(qtbot)
    for key in grid.visible_plots():
        assert grid.is_empty(key)
        assert grid._empty[key].isVisibleTo(grid) and grid._empty[key].text() == "No data yet"
        assert grid.widgets[key].getPlotItem().getAxis("left").style["showValues"] is False
    t = np.arange(1000.0, 1100.0, 1.0)
    grid.set_curve_data("gen_tps", t, 50 + np.sin(t))
    grid.refresh()
    assert not grid.is_empty("tokens") and not grid._empty["tokens"].isVisibleTo(grid)
    assert grid.widgets["tokens"].getPlotItem().getAxis("left").style["showValues"] is True
    assert grid.is_empty("requests")  # the others stay empty
    grid.clear_data()
    grid.refresh()
    assert grid.is_empty("tokens")


def test_utilisation_and_temperature_have_their_own_axes(qtbot) -> None:  # type: ignore[no-untyped-def]
    grid = shown_grid(qtbot)
    assert grid.curve_plot["util_pct"] != grid.curve_plot["temp_c"]
    for plot in (grid.curve_plot["util_pct"], grid.curve_plot["temp_c"]):
        units = {grid.curve_specs[s].unit for s, p in grid.curve_plot.items() if p == plot}
        assert len(units) == 1


def test_an_event_label_at_the_live_edge_stays_inside_the_plot(qtbot) -> None:  # type: ignore[no-untyped-def]
    grid = shown_grid(qtbot)
    t = np.arange(1000.0, 1100.0, 1.0)
    grid.set_curve_data("gen_tps", t, 50 + np.sin(t))
    grid.refresh()
    grid.add_marker(1099.5, "launch", "ready")  # "now", at the right edge of a live view
    grid.grab()
    line = grid.markers[-1][3][list(grid.widgets).index("tokens")]
    label = line.label
    view = grid.widgets["tokens"].getPlotItem().getViewBox()
    inside = view.sceneBoundingRect()
    box = label.sceneBoundingRect()
    assert label.toPlainText() == "launch"
    assert inside.left() <= box.left() and box.right() <= inside.right() + 1
