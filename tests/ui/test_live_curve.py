"""Live curves: columns kept up to date while samples arrive equal columns made from scratch, a
frame that only moves the newest column repaints only it, and a sub-pixel scroll moves nothing.

The reference is :func:`columns` over the same data (a direct numpy reduction per column), against
which the incremental path is checked on random data with gaps, at several column widths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from llm_dyno.ui.dashboard import Dashboard
from llm_dyno.ui.dashboard.drawing import TimeAxis
from llm_dyno.ui.dashboard.live_curve import Change, Columns, Curve, columns

T0 = 1_800_000_000.0


def stream(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples at irregular intervals (~4 Hz), noisy, with NaN gaps."""
    rng = np.random.default_rng(seed)
    t = T0 + np.cumsum(rng.uniform(0.05, 0.45, n))
    v = np.sin(np.arange(n) / 17.0) * 100 + rng.normal(0, 5, n)
    v[rng.random(n) < 0.05] = np.nan
    v[n // 3 : n // 3 + 12] = np.nan  # a gap longer than a column
    return t, v


Row = tuple[int, float, float, float]


def same_value(p: float, q: float) -> bool:
    return p == q or (math.isnan(p) and math.isnan(q))


def same_rows(a: list[Row], b: list[Row]) -> bool:
    return len(a) == len(b) and all(
        x[0] == y[0] and x[1] == y[1] and same_value(x[2], y[2]) and same_value(x[3], y[3])
        for x, y in zip(a, b, strict=True)
    )


def table(k: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[Row]:
    return list(zip(k.tolist(), x.tolist(), lo.tolist(), hi.tolist(), strict=True))


def as_table(cols: Columns) -> list[Row]:
    rows = table(cols.k, cols.x, cols.lo, cols.hi)
    if cols.tail is not None:
        rows.append(cols.tail)
    return rows


@pytest.mark.parametrize("dx", [0.3, 1.0, 3.25])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_columns_equal_columns_from_scratch(seed: int, dx: float) -> None:
    t, v = stream(seed, 3000)
    cols = Columns()
    rng = np.random.default_rng(seed + 100)
    start, end, window = 0, 200, 400  # a sliding buffer: grows at the end, loses its start
    changes = []
    while end < len(t):
        lo_time = t[end - 1] - window * 0.25
        first_col = math.floor(lo_time / dx)
        changes.append(cols.update(t[start:end], v[start:end], dx, first_col))
        k, x, lo, hi = columns(t[start:end], v[start:end], dx)
        keep = k >= max(first_col - 1, math.floor(t[start] / dx))
        want = table(k[keep], x[keep], lo[keep], hi[keep])
        got = as_table(cols)
        # the oldest column may still show samples that left the buffer (see live_curve's notes):
        # every other column, and its number, must be exactly what a fresh pass gives
        assert got[0][0] == want[0][0]
        assert same_rows(got[1:], want[1:]), f"after {end} samples"
        end += int(rng.integers(1, 6))
        start = max(start, end - window - int(rng.integers(0, 3)))
    assert changes[0] is Change.ALL
    assert {Change.TAIL, Change.ALL} <= set(changes)
    if dx >= 1.0:  # columns of several samples: some samples change nothing drawn
        assert Change.NONE in changes


def test_what_changed() -> None:
    dx = 1.0
    t = T0 + np.arange(10) * 0.25  # columns of four samples
    v = np.array([5.0, 6, 7, 8, 1, 2, 3, 4, 9, 9])
    cols = Columns()
    assert cols.update(t[:6], v[:6], dx, 0) is Change.ALL  # first look: all made
    assert cols.update(t[:7], v[:7], dx, 0) is Change.TAIL  # 3 widens the newest column [1, 2]
    assert cols.update(t[:8], v[:8], dx, 0) is Change.TAIL
    same = np.append(v[:8], 2.5)
    assert cols.update(np.append(t[:8], T0 + 1.9), same, dx, 0) is Change.NONE  # inside [1, 4]
    assert cols.update(t[:9], v[:9], dx, 0) is Change.ALL  # t=T0+2 is a new column
    other = v[:9].copy()
    other[-1] = -1.0  # not the same data with samples added: made again from scratch
    assert cols.update(t[:9], other, dx, 0) is Change.ALL
    assert cols.tail == (math.floor((T0 + 2) / dx), T0 + 2, -1.0, -1.0)
    assert cols.update(t[:9], other, 0.5, 0) is Change.ALL  # another column width


def test_bounds_cover_the_view_and_the_newest_column() -> None:
    dx = 1.0
    t = T0 + np.arange(40) * 0.25
    v = np.arange(40, dtype=float)
    v[-1] = 500.0
    cols = Columns()
    cols.update(t, v, dx, 0)
    assert cols.bounds(T0 + 2, T0 + 5.5) == (8.0, 23.0)  # columns 2..5 hold samples 8..23
    assert cols.bounds(T0 + 8, T0 + 20) == (32.0, 500.0)  # the newest column counts too
    assert cols.bounds(T0 + 100, T0 + 200) is None


def live(d: Dashboard, seconds: float, hz: float = 4.0) -> float:
    """Fill ``seconds`` of samples ending now into the dashboard's series; returns the last time."""
    n = int(seconds * hz)
    end = T0 + seconds
    for i in range(n):
        d.series.append_many(end - (n - 1 - i) / hz, {"gen_tps": 100 + 50 * math.sin(i / 9), "kv_pct": 40.0})
    return end


def test_live_frames_draw_what_a_fresh_decimation_draws(qtbot, dash: Dashboard) -> None:  # type: ignore[no-untyped-def]
    end = live(dash, 3600)
    dash.set_window("1 h")
    dash.live = False
    dash._dirty = True
    dash.redraw()
    curve = dash.plots.curves["gen_tps"]
    rect0 = QRectF(curve.boundingRect())
    n_changed = 0
    for i in range(1, 40):  # a frame per sample, as a 4 Hz feed
        value = 100 + 50 * math.sin((14400 + i) / 9) * (3 if i == 20 else 1)
        dash.series.append_many(end + i / 4, {"gen_tps": value, "kv_pct": 40.0})
        dash._dirty = True
        dash.redraw()
        t, v = dash.plots.curve_data("gen_tps")
        cols = dash.plots._data["gen_tps"].columns
        k, x, lo, hi = columns(t, v, cols.dx)
        keep = k >= cols.k[0]
        want = table(k[keep], x[keep], lo[keep], hi[keep])
        assert same_rows(as_table(cols)[1:], want[1:])
        _drawn_x, drawn_y = curve.getData()
        assert np.nanmax(drawn_y) == max(r[3] for r in as_table(cols))
        n_changed += curve.boundingRect() != rect0
        rect0 = QRectF(curve.boundingRect())
    assert n_changed < 39 / 2  # most frames keep the curve's bounds: only the newest column repaints


def test_tail_only_frames_keep_the_geometry(qtbot) -> None:  # type: ignore[no-untyped-def]
    curve = Curve(__import__("pyqtgraph").mkPen("r"))
    cols = Columns()
    t = T0 + np.arange(20) * 0.25
    v = np.array([float(i % 4) for i in range(20)])
    curve.set_columns(cols, cols.update(t, v, 1.0, 0), (0.01, 0.1))
    rect = QRectF(curve.boundingRect())
    change = cols.update(np.append(t, T0 + 4.8), np.append(v, 3.5), 1.0, 0)
    assert change is Change.TAIL
    curve.set_columns(cols, change, (0.01, 0.1))  # 3.5 is within the 8 pixels of room above 3
    assert curve.boundingRect() == rect  # no new geometry: only the tail's pixels are repainted
    assert curve._tail and curve._tail[-1].y2() == 3.5


def test_sub_pixel_scroll_is_left_alone(qtbot, dash: Dashboard) -> None:  # type: ignore[no-untyped-def]
    live(dash, 600)
    dash.set_window("5 min")
    qtbot.wait(50)
    vb = dash.plots.widgets["tokens"].getPlotItem().getViewBox()
    lo, hi = vb.viewRange()[0]
    pixel = (hi - lo) / vb.width()
    dash.plots.set_x_range(lo + 0.3 * pixel, hi + 0.3 * pixel, snap=True)
    assert vb.viewRange()[0] == [lo, hi]
    dash.plots.set_x_range(lo + 0.7 * pixel, hi + 0.7 * pixel, snap=True)
    assert vb.viewRange()[0][0] == pytest.approx(lo + 0.7 * pixel)
    dash.plots.set_x_range(lo, hi)  # without snap: exact
    assert vb.viewRange()[0] == pytest.approx([lo, hi])


def test_time_axis_keeps_its_drawing_for_sub_pixel_scrolls(qtbot, dash: Dashboard) -> None:  # type: ignore[no-untyped-def]
    live(dash, 600)
    dash.set_window("5 min")
    dash.plots.set_gpu_visible(False)
    qtbot.wait(100)
    axis = dash.plots.widgets["kv"].getPlotItem().getAxis("bottom")
    assert isinstance(axis, TimeAxis) and axis.linkedView() is not None
    dash.plots.grab()  # paints: the axis has a drawing now
    lo, hi = axis.range
    pixel = (hi - lo) / axis.width()
    picture = axis.picture
    assert picture is not None
    axis.setRange(lo + 0.2 * pixel, hi + 0.2 * pixel)
    assert axis.picture is picture  # nothing on screen would move
    axis.setRange(lo + 0.6 * pixel, hi + 0.6 * pixel)
    assert axis.picture is None  # drawn again at the next paint
    upper = dash.plots.widgets["tokens"].getPlotItem().getAxis("bottom")
    assert upper.linkedView() is None  # an upper plot's axis is a bare line, never laid out again


def test_zooming_one_plot_moves_all(qtbot, dash: Dashboard) -> None:  # type: ignore[no-untyped-def]
    live(dash, 600)
    dash.set_window("5 min")
    qtbot.wait(50)
    view = dash.plots.widgets["kv"]
    before = view.getPlotItem().getViewBox().viewRange()[0]
    pos = view.viewport().rect().center()
    wheel = QWheelEvent(
        QPointF(pos), QPointF(view.viewport().mapToGlobal(pos)), QPoint(0, 0), QPoint(0, 120),
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False,
    )  # fmt: skip
    with qtbot.waitSignal(dash.plots.rangeChangedByUser):
        QApplication.sendEvent(view.viewport(), wheel)  # the mouse wheel zooms the plot under it
    after = view.getPlotItem().getViewBox().viewRange()[0]
    assert after[1] - after[0] < before[1] - before[0]
    for w in dash.plots.widgets.values():
        assert w.getPlotItem().getViewBox().viewRange()[0] == pytest.approx(after)
    assert not dash.follow  # the user took over the time axis
