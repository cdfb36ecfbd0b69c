"""Live curves that cost what changed: per-pixel-column minima and maxima kept up to date as samples
arrive, and a curve item that redraws only the ends of its path.

A live view's data changes at its ends only: new samples at the right, old ones dropped at the left,
while the view scrolls by a fraction of a pixel per frame. So :class:`Columns` keeps every closed
column (a fixed grid of ``dx``-wide columns: column ``k`` holds ``k * dx <= t < (k + 1) * dx``) as
arrays and the newest, still filling column as plain numbers; a new sample costs a comparison, a
closed column an append. :class:`Curve` draws the closed columns as one path, built again only when
a column closes or leaves, and the newest column as two separate lines; a frame that changes only
those has just their few pixels painted again.

The oldest column is not worked out again while its samples leave the data one by one: it keeps
showing them (they are real samples, just older than what the buffer still holds) until the last
one has gone and the column goes with it. So the left edge never asks for a paint of its own.
"""

from __future__ import annotations

import itertools
import math
from enum import IntEnum

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF
from PySide6.QtGui import QPainter, QPainterPath, QPen

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
EMPTY: FloatArray = np.empty(0)
NO_COLUMNS: IntArray = np.empty(0, dtype=np.int64)
Column = tuple[float, float, float]  # time of its first sample, minimum, maximum


class Change(IntEnum):
    """What an update of :class:`Columns` changed, from least to most."""

    NONE = 0
    TAIL = 1  # only the newest column
    ALL = 2  # columns closed, left or were made again


def columns(t: FloatArray, v: FloatArray, dx: float) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
    """Each non-empty column of ``t, v`` (sorted by ``t``): its number, the time of its first
    sample, its minimum and its maximum (NaN only when all its values are NaN: a gap)."""
    if not len(t):
        return NO_COLUMNS, EMPTY, EMPTY, EMPTY
    k = np.floor(t / dx).astype(np.int64)
    starts = np.flatnonzero(np.diff(k, prepend=k[0] - 1))
    return k[starts], t[starts], np.fmin.reduceat(v, starts), np.fmax.reduceat(v, starts)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


class Columns:
    """The per-column minima and maxima of one live curve (see the module notes)."""

    def __init__(self) -> None:
        self.dx = 0.0
        # closed columns, oldest first: number, time of the first sample, minimum, maximum
        self.k, self.x, self.lo, self.hi = NO_COLUMNS, EMPTY, EMPTY, EMPTY
        self.tail: tuple[int, float, float, float] | None = None  # the newest column, still filling
        self._last: tuple[float, float] | None = None  # the newest sample taken in

    def _appended(self, t: FloatArray, v: FloatArray) -> bool:
        """Whether ``t, v`` is the data taken in before with samples added at the end (and maybe
        some dropped at the start): the newest sample seen is still there, nothing came before it."""
        if self._last is None or self.tail is None or not len(t):
            return False
        first = self.x[0] if len(self.x) else self.tail[1]
        if t[0] < first:
            return False
        j = int(np.searchsorted(t, self._last[0], "left"))
        return j < len(t) and t[j] == self._last[0] and _same(float(v[j]), self._last[1])

    def _rebuild(self, t: FloatArray, v: FloatArray, dx: float, first_col: int) -> None:
        self.dx = dx
        k, x, lo, hi = columns(t, v, dx)
        start = int(np.searchsorted(k, first_col - 1, "left"))  # one spare column left of the view
        if len(k) and start >= len(k):
            start = len(k) - 1
        self.k, self.x, self.lo, self.hi = k[start:-1], x[start:-1], lo[start:-1], hi[start:-1]
        self.tail = (int(k[-1]), float(x[-1]), float(lo[-1]), float(hi[-1])) if len(k) else None
        self._last = (float(t[-1]), float(v[-1])) if len(t) else None

    def update(self, t: FloatArray, v: FloatArray, dx: float, first_col: int) -> Change:
        """Take in the curve's current data for columns ``dx`` wide, the view starting at column
        ``first_col`` (columns further left are let go); says what changed."""
        if dx != self.dx or not self._appended(t, v):
            self._rebuild(t, v, dx, first_col)
            return Change.ALL
        if self.tail is None or self._last is None:  # _appended says they are set; for the type checker
            return Change.NONE
        change = Change.NONE
        j = int(np.searchsorted(t, self._last[0], "right"))
        tk, tx, tlo, thi = self.tail
        closed: list[tuple[int, float, float, float]] = []
        for ti, vi in zip(t[j:].tolist(), v[j:].tolist(), strict=True):
            ki = math.floor(ti / dx)
            if ki != tk:
                closed.append((tk, tx, tlo, thi))
                tk, tx, tlo, thi = ki, ti, vi, vi
            elif vi != vi:  # NaN: a gap only when the whole column is
                continue
            elif tlo != tlo or vi < tlo or vi > thi:
                tlo, thi = (vi, vi) if tlo != tlo else (min(tlo, vi), max(thi, vi))
                change = Change.TAIL
        self.tail = (tk, tx, tlo, thi)
        self._last = (float(t[-1]), float(v[-1]))
        if closed:
            ks, xs, los, his = zip(*closed, strict=True)
            self.k = np.concatenate((self.k, np.array(ks, dtype=np.int64)))
            self.x = np.concatenate((self.x, xs))
            self.lo, self.hi = np.concatenate((self.lo, los)), np.concatenate((self.hi, his))
            change = Change.ALL
        # columns left of the view (but one) and those whose samples all left the data go (a column
        # that lost only some keeps them: see the module notes)
        drop = int(np.searchsorted(self.k, max(first_col - 1, math.floor(t[0] / dx)), "left"))
        if drop:
            self.k, self.x, self.lo, self.hi = self.k[drop:], self.x[drop:], self.lo[drop:], self.hi[drop:]
            change = Change.ALL
        return change

    def points(self) -> tuple[FloatArray, FloatArray]:
        """Every column as two points (its minimum, then its maximum, at its first sample's time)."""
        x, lo, hi = self.x, self.lo, self.hi
        if self.tail is not None:
            x, lo, hi = np.append(x, self.tail[1]), np.append(lo, self.tail[2]), np.append(hi, self.tail[3])
        return _pairs(x, lo, hi)

    def bounds(self, lo: float, hi: float) -> tuple[float, float] | None:
        """The minimum and maximum of the columns that overlap ``lo``–``hi``."""
        c0, c1 = math.floor(lo / self.dx), math.floor(hi / self.dx)
        i0, i1 = int(np.searchsorted(self.k, c0, "left")), int(np.searchsorted(self.k, c1, "right"))
        mn = float(np.fmin.reduce(self.lo[i0:i1], initial=math.inf)) if i1 > i0 else math.inf
        mx = float(np.fmax.reduce(self.hi[i0:i1], initial=-math.inf)) if i1 > i0 else -math.inf
        if self.tail is not None and c0 <= self.tail[0] <= c1 and self.tail[2] == self.tail[2]:
            mn, mx = min(mn, self.tail[2]), max(mx, self.tail[3])
        return (mn, mx) if math.isfinite(mn) and math.isfinite(mx) else None


def _pairs(x: FloatArray, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    y = np.empty(2 * len(x))
    y[0::2], y[1::2] = lo, hi
    return np.repeat(x, 2), y


def _lines(points: list[tuple[float, float]]) -> list[QLineF]:
    """Lines between consecutive finite points (a NaN point breaks the line)."""
    return [
        QLineF(a[0], a[1], b[0], b[1]) for a, b in itertools.pairwise(points) if a[1] == a[1] and b[1] == b[1]
    ]


def _bounds(lines: list[QLineF], pad: tuple[float, float]) -> QRectF:
    """What ``lines`` cover, widened by ``pad`` (data units) each side."""
    rect = QRectF()
    for line in lines:
        rect = rect.united(QRectF(line.p1(), line.p2()).normalized())
    return rect.adjusted(-pad[0], -pad[1], pad[0], pad[1]) if lines else rect


class Curve(pg.GraphicsObject):  # type: ignore[misc]  # pyqtgraph is untyped
    """A bare curve of already decimated points, NaN as gaps.

    pyqtgraph's PlotCurveItem copies and checks its data on every update, scans it for its bounds
    and has the whole plot painted again. Here the path of the closed columns is built only when a
    column closes or leaves (:meth:`set_columns`); the newest column is two separate lines, and a
    frame that moves only them asks for just their few pixels to be painted again.
    """

    def __init__(self, pen: QPen) -> None:
        super().__init__()
        self.pen = QPen(pen)
        self.pen.setCosmetic(True)
        self._x, self._y = EMPTY, EMPTY
        self._path = QPainterPath()
        self._path_rect = QRectF()
        self._tail: list[QLineF] = []  # from the last closed column into the newest one
        self._tail_rect = QRectF()
        self._rect = QRectF()

    def set_points(self, x: FloatArray, y: FloatArray, pixel: tuple[float, float]) -> None:
        """Draw ``x, y`` from now on (arrays are kept, not copied). ``pixel`` is the size of a
        pixel in data units (width, height), to leave room for the pen around the points."""
        self._x, self._y = x, y
        self._set_path(x, y)
        self._set_all([], pixel)

    def set_columns(self, cols: Columns, change: Change, pixel: tuple[float, float]) -> None:
        """Draw ``cols``: the path of its closed columns is built again only when ``change`` is
        ALL; the newest column is drawn as lines. ``pixel`` as for :meth:`set_points`."""
        if change is Change.NONE:
            return
        points = [(float(cols.x[-1]), float(cols.hi[-1]))] if len(cols.x) else []
        if cols.tail is not None:
            points += [(cols.tail[1], cols.tail[2]), (cols.tail[1], cols.tail[3])]
        tail = _lines(points)
        if change is Change.ALL:
            self._x, self._y = cols.points()  # the closed columns, then the newest one
            closed = 2 * len(cols.x)
            self._set_path(self._x[:closed], self._y[:closed])
            self._set_all(tail, pixel)
            return
        rect = _bounds(tail, self._pad(pixel))
        if not rect.isNull() and not self._rect.contains(rect):
            self._set_all(tail, pixel)  # grew out of the room left: new bounds
            return
        if tail != self._tail:
            self.update(self._tail_rect.united(rect))  # only what moved is painted again
        self._tail, self._tail_rect = tail, rect

    def _pad(self, pixel: tuple[float, float]) -> tuple[float, float]:
        """The pen's width (and a pixel) in data units, so that all of a line is repainted."""
        pad = 1.0 + self.pen.widthF()
        return pad * abs(pixel[0]), pad * abs(pixel[1])

    def _set_path(self, x: FloatArray, y: FloatArray) -> None:
        self._path = pg.arrayToQPath(x, y, connect="finite") if len(x) else QPainterPath()
        self._path_rect = self._path.boundingRect()  # of the finite points: the path knows it

    def _set_all(self, tail: list[QLineF], pixel: tuple[float, float]) -> None:
        """New bounds and a paint of the whole curve. The bounds get a few pixels of room so that
        the newest column can grow for a while without new bounds (which repaint the whole plot)."""
        pad = self._pad(pixel)
        self._tail, self._tail_rect = tail, _bounds(tail, pad)
        rect = QRectF(self._path_rect).united(self._tail_rect)
        if not rect.isNull():
            room = (8 * abs(pixel[0]), 8 * abs(pixel[1]))
            rect = rect.adjusted(-pad[0], -pad[1] - room[1], pad[0] + room[0], pad[1] + room[1])
        self.prepareGeometryChange()
        self._rect = rect
        self.update()

    def getData(self) -> tuple[FloatArray, FloatArray]:
        """The points drawn (pyqtgraph's name)."""
        return self._x, self._y

    def pixelPadding(self) -> float:
        """Half the pen's width in pixels (what pyqtgraph's curves report)."""
        return float(self.pen.widthF()) * 0.7072

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, p: QPainter, *_args: object) -> None:
        # thin lines without antialiasing, as pyqtgraph's curves draw by default (the view's
        # painter may have it on)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setPen(self.pen)
        p.drawPath(self._path)
        if self._tail:
            p.drawLines(self._tail)


__all__ = ["Change", "Columns", "Curve", "columns"]
