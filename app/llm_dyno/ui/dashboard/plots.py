"""The dashboard's plots: one PlotWidget per quantity, sharing one wall-clock time range.

Curves get new data from the dashboard's timer (:meth:`PlotGrid.set_curve_data`), never per sample.
Each curve is reduced to the minimum and maximum of each pixel column: a live view that follows
the clock keeps those columns up to date as samples arrive and repaints only the newest column's
pixels (live_curve.py); any other view decimates the visible range in one go (drawing.py). Y
ranges are set from those minima and maxima instead of pyqtgraph's auto-range, which re-scans every
curve on every frame, and a scroll of less than half a pixel is not applied. So an hour of samples
costs what the pixels cost (benchmarks/plot_redraw.py). Legends sit in the plot titles (coloured
names) so they never cover data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsItem, QGridLayout, QLabel, QWidget

from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import POSITION_PLOT
from llm_dyno.ui import theme
from llm_dyno.ui.dashboard.drawing import EMPTY, FloatArray, TimeAxis, decimate, visible_bounds
from llm_dyno.ui.dashboard.live_curve import Columns, Curve
from llm_dyno.ui.dashboard.plot_specs import (
    EVENT_COLORS,
    GREY,
    CurveSpec,
    PlotSpec,
    default_plots,
)

_TICK_LENGTH = 5  # pixels, pointing away from the plot (pyqtgraph's default -5 points into it)


@dataclass
class _CurveData:
    """The full data of one curve and what of it is on screen."""

    t: FloatArray
    v: FloatArray
    version: int = 0
    appended: bool = False  # the new data is the old with samples added at the end (a live view)
    shown: tuple[int, float, float, float] | None = None  # (version, dx, first column, last column)
    bounds: tuple[float, float] | None = None  # visible min and max, for the y range
    columns: Columns = field(default_factory=Columns)  # kept up to date while data is appended


class PlotGrid(QWidget):
    """The plots in a grid; emits ``cursorMoved(ts)`` as the mouse moves over any of them."""

    cursorMoved = Signal(float)
    rangeChangedByUser = Signal()

    def __init__(self, specs: list[PlotSpec] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.specs = {s.key: s for s in (specs or default_plots())}
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(6)
        self.widgets: dict[str, pg.PlotWidget] = {}
        self.curves: dict[str, Curve] = {}
        self._data: dict[str, _CurveData] = {}
        self._y_ranges: dict[str, tuple[float, float, float]] = {}
        self._matrices: dict[str, tuple[float, ...]] = {}  # the view each plot's transform is for
        self.curve_specs: dict[str, CurveSpec] = {}
        self.curve_plot: dict[str, str] = {}
        self.cursors: dict[str, pg.InfiniteLine] = {}
        self.markers: list[tuple[float, str, str, list[pg.InfiniteLine]]] = []
        self.master: pg.PlotItem | None = None
        self._empty: dict[str, QLabel] = {}
        self._has_data: dict[str, bool] = {}
        self._gpu_label = ""  # which GPUs the GPU plots show, e.g. "GPU 1+2"
        self._hidden: dict[str, set[str]] = {}  # plots hidden, by why: "gpu", "spec"
        c = theme.colors()
        self._fg, self._bg = c.muted, c.base
        for spec in self.specs.values():
            self._add_plot(spec)
        self._label_bottom_plots()

    # ---- construction --------------------------------------------------------------------------
    def _add_plot(self, spec: PlotSpec) -> None:
        w = pg.PlotWidget(background=self._bg, axisItems={"bottom": TimeAxis(orientation="bottom")})
        w.setMinimumHeight(110)
        item = w.getPlotItem()
        item.showGrid(x=False, y=False)  # alpha-blended grid lines cost more than the curves (benchmark)
        item.setMenuEnabled(False)
        item.hideButtons()
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setTextPen(self._fg)
            axis.setPen(QColor(self._fg))
        for side in ("left", "bottom", "top", "right"):
            # No axis has a label, so no SI prefix ever shows; working it out re-renders the (hidden)
            # label's HTML at every range change, even on the hidden top and right axes.
            item.getAxis(side).enableAutoSIPrefix(False)
        left = item.getAxis("left")
        left.setWidth(50)  # room for "0.015" beside ticks that point outwards
        # ticks point out of the plot, so the axis does not overlap the curves and is not painted
        # again whenever they are
        left.setStyle(tickLength=_TICK_LENGTH)
        # kept as a pixmap: the curves' repaints overlap it, and a blit is far cheaper than
        # replaying its drawing in Python each frame (it is drawn again when its range changes)
        left.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        vb = item.getViewBox()
        vb.setMouseEnabled(x=True, y=False)
        # Ranges are set by us (set_x_range, _refresh_plot): pyqtgraph's auto-range would scan every
        # point of every curve again at each frame.
        vb.disableAutoRange()
        if spec.y_min is not None:
            vb.setLimits(yMin=spec.y_min - 1e-9)
        if self.master is None:
            self.master = item
        # The plots share one time range, set on each by set_x_range (and copied from a plot the
        # user drags or zooms): pyqtgraph's X links would map every change through each linked
        # view's screen geometry again, which costs more than a redraw of its curves.
        vb.sigXRangeChanged.connect(lambda *_, key=spec.key: self._refresh_plot(key))
        vb.sigResized.connect(lambda *_, key=spec.key: self._refresh_plot(key))
        vb.sigRangeChangedManually.connect(lambda *_, key=spec.key: self._changed_by_user(key))
        pen = pg.mkPen(self._fg, width=1, style=Qt.PenStyle.DotLine)
        cursor = pg.InfiniteLine(angle=90, movable=False, pen=pen)
        cursor.setZValue(20)
        cursor.hide()
        item.addItem(cursor, ignoreBounds=True)
        self.cursors[spec.key] = cursor
        w.scene().sigMouseMoved.connect(lambda pos, key=spec.key: self._mouse_moved(key, pos))
        # "No data yet" over a plot with nothing in view, instead of an empty frame with 0.1–0.9 ticks
        empty = QLabel("No data yet", w)
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        empty.setStyleSheet(f"color: {self._fg}; background: transparent;")
        empty.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._empty[spec.key] = empty
        self.widgets[spec.key] = w
        self.grid.addWidget(w, spec.row, spec.col, 1, spec.span)
        for curve in spec.curves:
            self.add_curve(spec.key, curve)
        self._update_title(spec.key)

    def add_curve(self, plot: str, spec: CurveSpec) -> Curve:
        """Add a curve to a plot (e.g. a per-position line once the server reports positions)."""
        if spec.series in self.curves:
            return self.curves[spec.series]
        style = Qt.PenStyle.DashLine if spec.dashed else Qt.PenStyle.SolidLine
        # A bare curve item: the data it gets is already decimated and its bounds known (see
        # refresh), so pyqtgraph's data items would only copy, check and scan it again.
        item = Curve(pg.mkPen(spec.color, width=spec.width, style=style))
        self.widgets[plot].getPlotItem().addItem(item)
        self.curves[spec.series] = item
        self._data[spec.series] = _CurveData(EMPTY, EMPTY)
        self.curve_specs[spec.series] = spec
        self.curve_plot[spec.series] = plot
        self._update_title(plot)
        return item

    def _update_title(self, plot: str) -> None:
        spec = self.specs[plot]
        names = [s for s, p in self.curve_plot.items() if p == plot]
        specs = [self.curve_specs[n] for n in names]
        legend = " ".join(
            f'<span style="color:{c.color}">{"┅" if c.dashed else "━"}</span>'
            f'<span style="color:{self._fg}"> {c.label}</span>'
            for c in specs
        )
        text = f"{spec.title} · {self._gpu_label}" if spec.gpu and self._gpu_label else spec.title
        title = f'<span style="color:{theme.colors().text}; font-weight:600">{text}</span>'
        self.widgets[plot].getPlotItem().setTitle(f"{title}&nbsp;&nbsp;&nbsp;{legend}", size="9pt")

    # ---- state ---------------------------------------------------------------------------------
    def set_gpu_visible(self, visible: bool) -> None:
        """Show or hide the plots that need a GPU."""
        self._hide("gpu", set() if visible else {key for key, spec in self.specs.items() if spec.gpu})

    def set_spec_decode_visible(self, visible: bool) -> None:
        """Show or hide the plots that only speculative decoding fills (acceptance, its mean length)."""
        self._hide("spec", set() if visible else set(self.spec_decode_plots()))

    def spec_decode_plots(self) -> list[str]:
        """The plots every curve of which is a speculative-decoding series (the per-position lines too)."""
        spec = {m.key for m in live_metrics.LIVE_METRICS if m.spec_decode}
        return [
            key
            for key, s in self.specs.items()
            if key == POSITION_PLOT or (s.curves and all(c.series in spec for c in s.curves))
        ]

    def _hide(self, why: str, keys: set[str]) -> None:
        self._hidden[why] = keys
        hidden = set().union(*self._hidden.values())
        self.show_only([key for key in self.specs if key not in hidden])

    def show_only(self, keys: list[str]) -> None:
        """Show just the plots ``keys`` (e.g. a smaller dashboard), laying the time axis out again."""
        for key, w in self.widgets.items():
            w.setVisible(key in keys)
        self._label_bottom_plots()
        self.refresh()  # hidden plots are not kept up to date

    def set_gpu_label(self, label: str) -> None:
        """Name the GPUs the GPU plots show in their titles ("" for none)."""
        self._gpu_label = label
        for key, spec in self.specs.items():
            if spec.gpu:
                self._update_title(key)

    def _label_bottom_plots(self) -> None:
        # The plots share one time axis: only the lowest plot of each column shows it (labels and
        # ticks); the others keep just the axis line. Such a line is unlinked from the view, so it is
        # never laid out again while the view scrolls (ticks on eight axes cost more than the curves).
        shown = [s for s in self.specs.values() if not self.widgets[s.key].isHidden()]
        cols = {c for s in shown for c in s.columns}
        lowest = {col: max(s.row for s in shown if col in s.columns) for col in cols}
        for s in shown:
            item = self.widgets[s.key].getPlotItem()
            axis, labelled = item.getAxis("bottom"), any(s.row == lowest[c] for c in s.columns)
            if labelled and axis.linkedView() is None:
                axis.linkToView(item.getViewBox())
            elif not labelled and axis.linkedView() is not None:
                axis.unlinkFromView()
            # no placeholder times (00.100 … 00.900) under a plot with no data yet
            values = labelled and self._has_data.get(s.key, False)
            axis.setStyle(showValues=values, tickLength=_TICK_LENGTH if labelled else 0)
            # kept as a pixmap, drawn again only when it changes: a bare line never does, and the
            # time axis only once the view has scrolled by half a pixel (TimeAxis.setRange)
            axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def visible_plots(self) -> list[str]:
        """Keys of the plots shown."""
        return [k for k, w in self.widgets.items() if not w.isHidden()]

    def visible_series(self) -> list[str]:
        """The series drawn in visible plots."""
        shown = set(self.visible_plots())
        return [s for s, p in self.curve_plot.items() if p in shown]

    def set_curve_data(self, series: str, t: FloatArray, v: FloatArray, *, appended: bool = False) -> None:
        """Replace one curve's data (arrays are the caller's; not copied; ``t`` sorted).

        ``appended`` says that the data is what was set before with samples added at the end (and
        maybe some dropped at the start), as in a live view that follows a window: the drawing then
        works out only the columns at the ends again. The screen catches up at the next
        :meth:`refresh` (or range change), so that a redraw that sets many curves and then scrolls
        decimates each curve once.
        """
        d = self._data[series]
        d.t, d.v, d.version, d.appended = t, v, d.version + 1, appended

    def curve_data(self, series: str) -> tuple[FloatArray, FloatArray]:
        """The full data of a curve (as last set)."""
        d = self._data[series]
        return d.t, d.v

    def refresh(self) -> None:
        """Bring every visible plot up to date with its data, time range and width.

        Cheap when nothing changed: a curve is decimated again only when its data, the pixel width
        of a column or the columns in view changed, and a range is only set when it moved.
        """
        for key in self.widgets:
            self._refresh_plot(key)

    def _refresh_plot(self, plot: str) -> None:
        w = self.widgets.get(plot)
        if w is None or w.isHidden():
            return  # not built yet (signals during construction) or hidden: not worth drawing
        vb = w.getPlotItem().getViewBox()
        lo, hi = (float(x) for x in vb.viewRange()[0])
        width = vb.width()
        # a column per pixel; rounded so that float noise in the range does not miss the cache
        dx = float(f"{(hi - lo) / width:.6g}") if width > 0 and hi > lo else 0.0
        c0, c1 = (math.floor(lo / dx), math.floor(hi / dx)) if dx else (lo, hi)
        (y0, y1), height = vb.viewRange()[1], vb.height()
        pixel = (dx, (y1 - y0) / height if height > 0 else 0.0)  # data units per pixel
        y_lo, y_hi = math.inf, -math.inf
        for series, p in self.curve_plot.items():
            if p != plot:
                continue
            d = self._data[series]
            key = (d.version, dx, c0, c1)
            if d.shown != key:
                if d.appended and dx:
                    change = d.columns.update(d.t, d.v, dx, int(c0))
                    self.curves[series].set_columns(d.columns, change, pixel)
                    d.bounds = d.columns.bounds(lo, hi)
                else:
                    d.columns = Columns()  # the next append starts from whole columns
                    # one column of slack each side: scrolling less than a column keeps this result
                    x, y = (
                        decimate(d.t, d.v, (c0 - 1) * dx, (c1 + 2) * dx, dx)
                        if dx
                        else decimate(d.t, d.v, lo, hi, dx)
                    )
                    self.curves[series].set_points(x, y, pixel)
                    d.bounds = visible_bounds(d.t, d.v, lo, hi)
                d.shown = key
            if d.bounds is not None:
                y_lo, y_hi = min(y_lo, d.bounds[0]), max(y_hi, d.bounds[1])
        self._show_empty(plot, w, y_lo <= y_hi)
        if y_lo <= y_hi and self._y_ranges.get(plot) != (y_lo, y_hi, height):
            self._y_ranges[plot] = (y_lo, y_hi, height)
            # What pyqtgraph's auto-range did, so the plots look as before: widen by the pens' half
            # width in pixels, then the default padding (which setYRange adds).
            if height > 0:
                pen_px = max(self.curves[n].pixelPadding() for n, p in self.curve_plot.items() if p == plot)
                pad = pen_px * (y_hi - y_lo) / height
                y_lo, y_hi = y_lo - pad, y_hi + pad
            vb.setYRange(y_lo, y_hi)
        # pyqtgraph applies a new range to the view's transform only when it paints, and that moves
        # every item again, which asks for a second paint of the whole plot: apply it now instead.
        view = (*(float(x) for x in vb.viewRange()[1]), lo, hi, width, height)
        if self._matrices.get(plot) != view:
            self._matrices[plot] = view
            vb.updateMatrix()

    def _show_empty(self, plot: str, w: pg.PlotWidget, has_data: bool) -> None:
        label = self._empty[plot]
        if not has_data:
            label.setGeometry(w.rect())  # follows the plot's size (this runs on every resize)
        if self._has_data.get(plot) == has_data:
            return
        self._has_data[plot] = has_data
        label.setVisible(not has_data)
        w.getPlotItem().getAxis("left").setStyle(showValues=has_data)  # no meaningless 0.1–0.9
        bottom = w.getPlotItem().getAxis("bottom")
        if bottom.linkedView() is not None:  # the time axis this column shows (see _label_bottom_plots)
            bottom.setStyle(showValues=has_data)

    def is_empty(self, plot: str) -> bool:
        """Whether the plot shows its "No data yet" state."""
        return not self._has_data.get(plot, False)

    def set_x_range(self, t0: float, t1: float, *, skip: str | None = None, snap: bool = False) -> None:
        """Show ``t0``–``t1`` on every plot (but ``skip``). With ``snap`` a plot that would scroll by
        less than half a pixel, at the same zoom, is left as it is: nothing on screen would move,
        and a live view following the clock would otherwise lay out every plot again each frame."""
        if t1 <= t0:
            return
        for key, w in self.widgets.items():
            if key == skip:
                continue
            vb = w.getPlotItem().getViewBox()
            if snap:
                lo, hi = vb.viewRange()[0]
                width = vb.width()
                span = t1 - t0
                same_zoom = math.isclose(hi - lo, span, rel_tol=1e-9)
                if width > 0 and same_zoom and abs(t0 - lo) < 0.5 * span / width:
                    continue
            vb.setXRange(t0, t1, padding=0)

    def _changed_by_user(self, plot: str) -> None:
        lo, hi = self.widgets[plot].getPlotItem().getViewBox().viewRange()[0]
        self.set_x_range(float(lo), float(hi), skip=plot)
        self.rangeChangedByUser.emit()

    def x_range(self) -> tuple[float, float]:
        """The visible time range."""
        if self.master is None:
            return 0.0, 1.0
        lo, hi = self.master.getViewBox().viewRange()[0]
        return float(lo), float(hi)

    # ---- crosshair and events ------------------------------------------------------------------
    def _mouse_moved(self, key: str, pos: QPointF) -> None:
        item = self.widgets[key].getPlotItem()
        if not item.sceneBoundingRect().contains(pos):
            return
        ts = float(item.getViewBox().mapSceneToView(pos).x())
        self.set_cursor(ts)
        self.cursorMoved.emit(ts)

    def set_cursor(self, ts: float | None) -> None:
        """Draw the crosshair line at ``ts`` on every plot (None hides it)."""
        for line in self.cursors.values():
            if ts is None:
                line.hide()
            else:
                line.setPos(ts)
                line.show()

    def add_marker(self, ts: float, kind: str, text: str) -> None:
        """A vertical event marker at ``ts`` on every plot, labelled on the top-left one."""
        color = EVENT_COLORS.get(kind, GREY)
        lines = []
        for key, w in self.widgets.items():
            label = kind if key == "tokens" else None  # the text is in the tooltip and the readout
            line = pg.InfiniteLine(
                pos=ts, angle=90, movable=False, label=label,
                pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DashLine),
                # the text ends at the line: new events sit at the right edge of a live view, where a
                # label to the right of its line is cut off ("lau")
                labelOpts={"position": 0.97, "color": color, "anchors": [(1, 0), (1, 0)]},
            )  # fmt: skip
            line.setToolTip(f"{kind}: {text}")
            line.setZValue(10)
            w.getPlotItem().addItem(line, ignoreBounds=True)
            lines.append(line)
        self.markers.append((ts, kind, text, lines))

    def drop_markers_before(self, ts: float) -> None:
        """Forget markers older than ``ts`` (keeps the number of items bounded)."""
        keep = []
        for m in self.markers:
            if m[0] >= ts:
                keep.append(m)
                continue
            for line, w in zip(m[3], self.widgets.values(), strict=True):
                w.getPlotItem().removeItem(line)
        self.markers = keep

    def clear_data(self) -> None:
        """Empty every curve and marker."""
        for series, item in self.curves.items():
            self._data[series] = _CurveData(EMPTY, EMPTY)
            item.set_points(EMPTY, EMPTY, (0.0, 0.0))
        self._y_ranges.clear()
        self.drop_markers_before(float("inf"))
