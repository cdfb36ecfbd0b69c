"""What keeps the dashboard cheap to redraw: per-pixel-column decimation of a curve, the visible
range of a series, and a time axis that works out its ticks once per zoom level (a live view keeps
its columns up to date instead: see live_curve.py)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg

FloatArray = npt.NDArray[np.float64]
EMPTY: FloatArray = np.empty(0)


def decimate(t: FloatArray, v: FloatArray, lo: float, hi: float, dx: float) -> tuple[FloatArray, FloatArray]:
    """The part of ``t, v`` (sorted by ``t``) that shows in ``lo``–``hi``, at most two points per
    ``dx``-wide column: each column's minimum and maximum, so that no spike is lost.

    Columns sit on a fixed grid (multiples of ``dx``), not on ``lo``: while the view scrolls by whole
    pixels, each column keeps its points and the curve does not shimmer. One sample beyond each edge
    is kept so that the line runs to the border. A column of only NaN stays NaN (a gap).
    """
    i0 = max(int(np.searchsorted(t, lo, "left")) - 1, 0)
    i1 = min(int(np.searchsorted(t, hi, "right")) + 1, len(t))
    ts, vs = t[i0:i1], v[i0:i1]
    if dx <= 0 or len(ts) <= 2 * (hi - lo) / dx + 4:
        return ts, vs  # already about as sparse as the pixels: nothing to gain
    # Where each column starts, by binary search of the column edges (a few hundred) rather than a
    # pass over every sample; empty columns give repeated starts, which reduceat must not see.
    first = math.floor(ts[0] / dx)
    edges = np.arange(first + 1, math.floor(ts[-1] / dx) + 1) * dx
    starts = np.searchsorted(ts, edges, "left")
    starts = np.concatenate(([0], starts[np.flatnonzero(np.diff(starts, prepend=0))]))
    # fmin/fmax ignore NaN unless the whole column is NaN; then the column stays a gap
    lo_v = np.fmin.reduceat(vs, starts)
    hi_v = np.fmax.reduceat(vs, starts)
    x = np.repeat(ts[starts], 2)
    y = np.empty(2 * len(starts))
    y[0::2], y[1::2] = lo_v, hi_v
    return x, y


def visible_bounds(t: FloatArray, v: FloatArray, lo: float, hi: float) -> tuple[float, float] | None:
    """The minimum and maximum of the finite values with ``lo <= t <= hi`` (None: there are none)."""
    part = v[int(np.searchsorted(t, lo, "left")) : int(np.searchsorted(t, hi, "right"))]
    if not len(part):
        return None
    mn = float(np.fmin.reduce(part, initial=math.inf))
    mx = float(np.fmax.reduce(part, initial=-math.inf))
    return (mn, mx) if math.isfinite(mn) and math.isfinite(mx) else None


_Ticks = list[tuple[float, list[float]]]  # (spacing, tick times) per tick level


class TimeAxis(pg.DateAxisItem):  # type: ignore[misc]  # pyqtgraph is untyped
    """A wall-clock axis that works out its ticks once per zoom level, not once per frame.

    pyqtgraph's DateAxisItem measures the example text of every zoom level and steps through the
    calendar at each paint; while the dashboard scrolls, the zoom stays the same and the ticks only
    slide. So the ticks of three window widths around the view are kept and filtered to the view,
    and the tick strings are remembered.
    """

    zoomLevel: object  # set by DateAxisItem.tickValues, read by its tickStrings
    minSpacing: float

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # (span and size it was made for, first and last time covered, zoom level, min spacing, ticks)
        self._ticks: tuple[tuple[float, float], float, float, object, float, _Ticks] | None = None
        self._strings: dict[tuple[float, float], str] = {}
        self._drawn: tuple[float, float] | None = None  # the range the current drawing shows

    def setRange(self, mn: float, mx: float) -> None:
        """Take the view's new range; while it only scrolls by less than half a pixel from where
        the ticks were drawn, keep the drawing (nothing on screen would move) instead of laying out
        and painting the axis again at every frame of a live view."""
        # getattr: pyqtgraph's __init__ calls this before ours has run
        drawn, width = getattr(self, "_drawn", None), float(self.width())
        span = mx - mn
        if (
            drawn is not None
            and self.picture is not None
            and width > 0
            and math.isclose(span, drawn[1] - drawn[0], rel_tol=1e-9)
            and abs(mn - drawn[0]) < 0.5 * span / width
        ):
            self.range = [mn, mx]
            return
        super().setRange(mn, mx)

    def generateDrawSpecs(self, p: object) -> object:
        self._drawn = (float(self.range[0]), float(self.range[1]))  # what the drawing is made for
        return super().generateDrawSpecs(p)

    def tickValues(self, minVal: float, maxVal: float, size: float) -> _Ticks:
        span = maxVal - minVal
        key = (float(f"{span:.6g}"), float(size))
        c = self._ticks
        if c is None or c[0] != key or minVal < c[1] or maxVal > c[2]:
            lo, hi = minVal - span, maxVal + span
            values = super().tickValues(lo, hi, 3 * size)  # same density, so the same zoom level
            c = self._ticks = (key, lo, hi, self.zoomLevel, self.minSpacing, values)
        self.zoomLevel, self.minSpacing = c[3], c[4]  # tickStrings reads them
        return [(spacing, [v for v in vs if minVal <= v <= maxVal]) for spacing, vs in c[5]]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        out = []
        for v in values:
            text = self._strings.get((v, spacing))
            if text is None:
                if len(self._strings) > 2000:  # bounded: a long scroll leaves old ticks behind
                    self._strings.clear()
                text = self._strings[(v, spacing)] = super().tickStrings([v], scale, spacing)[0]
            out.append(text)
        return out
