"""The dashboard's plots: one PlotWidget per quantity, X-linked on a wall-clock DateAxisItem.

Curves are redrawn by :meth:`PlotGrid.set_curve_data` from the dashboard's timer, never per sample;
each curve uses peak downsampling and clip-to-view, so 14,400 points cost what the pixels cost.
Legends sit in the plot titles (coloured names) so they never cover data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGridLayout, QWidget

from llm_dyno.ui import theme

BLUE, ORANGE, GREEN, PURPLE, RED, TEAL, GREY = (
    "#2563eb", "#f59e0b", "#16a34a", "#9333ea", "#dc2626", "#0d9488", "#8b93a1",
)  # fmt: skip
POSITION_COLORS = ("#60a5fa", "#a78bfa", "#f472b6", "#34d399", "#fbbf24", "#94a3b8")
EVENT_COLORS = {"warning": "#d97706", "error": RED, "launch": GREEN, "benchmark": PURPLE}


@dataclass(frozen=True)
class CurveSpec:
    """One curve: the series it draws, its legend name, unit and look."""

    series: str
    label: str
    unit: str
    color: str
    dashed: bool = False
    width: float = 1.0  # wider pens cost several times more to draw (segments or stroked paths)
    fmt: str = "{:.1f}"


@dataclass(frozen=True)
class PlotSpec:
    """One plot: a key, its title, where it sits and whether it needs a GPU."""

    key: str
    title: str
    row: int
    col: int
    curves: tuple[CurveSpec, ...]
    gpu: bool = False
    y_min: float | None = 0.0


def default_plots() -> list[PlotSpec]:
    """The dashboard's plots, two columns."""
    return [
        PlotSpec("tokens", "Throughput · tok/s", 0, 0, (
            CurveSpec("gen_tps", "generation", "tok/s", BLUE),
            CurveSpec("prompt_tps", "prompt", "tok/s", ORANGE),
        )),
        PlotSpec("requests", "Requests", 0, 1, (
            CurveSpec("running", "running", "", GREEN, fmt="{:.0f}"),
            CurveSpec("waiting", "waiting", "", ORANGE, fmt="{:.0f}"),
        )),
        PlotSpec("acceptance", "Draft acceptance · %", 1, 0, (
            CurveSpec("acceptance_pct", "rate", "%", PURPLE),
        )),
        PlotSpec("length", "Mean acceptance length · tokens", 1, 1, (
            CurveSpec("mean_acc_len", "mean length", "tok", TEAL, fmt="{:.2f}"),
        )),
        PlotSpec("power", "GPU power · W", 2, 0, (
            CurveSpec("power_w", "power", "W", RED, fmt="{:.0f}"),
            CurveSpec("power_limit_w", "limit", "W", GREY, dashed=True, fmt="{:.0f}"),
        ), gpu=True),
        PlotSpec("gpu", "GPU utilisation % · temperature °C", 2, 1, (
            CurveSpec("util_pct", "util", "%", BLUE, fmt="{:.0f}"),
            CurveSpec("temp_c", "temp", "°C", ORANGE, fmt="{:.0f}"),
        ), gpu=True),
        PlotSpec("kv", "KV cache use · %", 3, 0, (
            CurveSpec("kv_pct", "KV cache", "%", GREEN),
        )),
        PlotSpec("clock", "SM clock · MHz", 3, 1, (
            CurveSpec("sm_clock_mhz", "SM clock", "MHz", PURPLE, fmt="{:.0f}"),
            CurveSpec("sm_clock_max_mhz", "max", "MHz", GREY, dashed=True, fmt="{:.0f}"),
        ), gpu=True),
    ]  # fmt: skip


def position_curve(i: int) -> CurveSpec:
    """The per-position acceptance curve of draft position ``i`` (1-based)."""
    color = POSITION_COLORS[(i - 1) % len(POSITION_COLORS)]
    return CurveSpec(f"acc_pos{i}_pct", f"pos {i}", "%", color, width=1.0)


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
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.curve_specs: dict[str, CurveSpec] = {}
        self.curve_plot: dict[str, str] = {}
        self.cursors: dict[str, pg.InfiniteLine] = {}
        self.markers: list[tuple[float, str, str, list[pg.InfiniteLine]]] = []
        self.master: pg.PlotItem | None = None
        c = theme.colors()
        self._fg, self._bg = c.muted, c.base
        for spec in self.specs.values():
            self._add_plot(spec)
        self._label_bottom_plots()

    # ---- construction --------------------------------------------------------------------------
    def _add_plot(self, spec: PlotSpec) -> None:
        w = pg.PlotWidget(background=self._bg, axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
        w.setMinimumHeight(110)
        item = w.getPlotItem()
        item.showGrid(x=False, y=False)  # alpha-blended grid lines cost more than the curves (benchmark)
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setTextPen(self._fg)
            axis.setPen(QColor(self._fg))
        item.getAxis("left").setWidth(44)
        vb = item.getViewBox()
        vb.setMouseEnabled(x=True, y=False)
        vb.enableAutoRange(axis="y", enable=True)
        vb.setAutoVisible(y=True)
        if spec.y_min is not None:
            vb.setLimits(yMin=spec.y_min - 1e-9)
        if self.master is None:
            self.master = item
        else:
            item.setXLink(self.master)
        vb.sigRangeChangedManually.connect(lambda *_: self.rangeChangedByUser.emit())
        pen = pg.mkPen(self._fg, width=1, style=Qt.PenStyle.DotLine)
        cursor = pg.InfiniteLine(angle=90, movable=False, pen=pen)
        cursor.setZValue(20)
        cursor.hide()
        item.addItem(cursor, ignoreBounds=True)
        self.cursors[spec.key] = cursor
        w.scene().sigMouseMoved.connect(lambda pos, key=spec.key: self._mouse_moved(key, pos))
        self.widgets[spec.key] = w
        self.grid.addWidget(w, spec.row, spec.col)
        for curve in spec.curves:
            self.add_curve(spec.key, curve)
        self._update_title(spec.key)

    def add_curve(self, plot: str, spec: CurveSpec) -> pg.PlotDataItem:
        """Add a curve to a plot (e.g. a per-position line once the server reports positions)."""
        if spec.series in self.curves:
            return self.curves[spec.series]
        style = Qt.PenStyle.DashLine if spec.dashed else Qt.PenStyle.SolidLine
        item = pg.PlotDataItem(pen=pg.mkPen(spec.color, width=spec.width, style=style), connect="finite")
        # the PlotItem hands its downsampling / clip settings to items it adds (see _add_plot)
        self.widgets[plot].getPlotItem().addItem(item)
        # peak keeps each bucket's min and max, so one bucket per pixel loses no spike (default: 5)
        item.opts["autoDownsampleFactor"] = 1.0
        self.curves[spec.series] = item
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
        title = f'<span style="color:{theme.colors().text}; font-weight:600">{spec.title}</span>'
        self.widgets[plot].getPlotItem().setTitle(f"{title}&nbsp;&nbsp;&nbsp;{legend}", size="9pt")

    # ---- state ---------------------------------------------------------------------------------
    def set_gpu_visible(self, visible: bool) -> None:
        """Show or hide the plots that need a GPU."""
        for key, spec in self.specs.items():
            if spec.gpu:
                self.widgets[key].setVisible(visible)
        self._label_bottom_plots()

    def _label_bottom_plots(self) -> None:
        # The plots share one time axis: only the lowest plot of each column shows its labels, which
        # saves height and the cost of laying out ticks on every plot at each redraw.
        shown = [s for s in self.specs.values() if not self.widgets[s.key].isHidden()]
        lowest = {col: max(s.row for s in shown if s.col == col) for col in {s.col for s in shown}}
        for s in shown:
            self.widgets[s.key].getPlotItem().getAxis("bottom").setStyle(showValues=s.row == lowest[s.col])

    def visible_plots(self) -> list[str]:
        """Keys of the plots shown."""
        return [k for k, w in self.widgets.items() if not w.isHidden()]

    def visible_series(self) -> list[str]:
        """The series drawn in visible plots."""
        shown = set(self.visible_plots())
        return [s for s, p in self.curve_plot.items() if p in shown]

    def set_curve_data(self, series: str, t: np.ndarray, v: np.ndarray) -> None:
        """Replace one curve's data (arrays are the caller's; not copied)."""
        self.curves[series].setData(t, v, connect="finite")

    def curve_data(self, series: str) -> tuple[np.ndarray, np.ndarray]:
        """The full data of a curve (as last set)."""
        item = self.curves[series]
        t, v = item.xData, item.yData
        if t is None or v is None:
            return np.empty(0), np.empty(0)
        return t, v

    def set_x_range(self, t0: float, t1: float) -> None:
        """Show ``t0``–``t1`` on every plot (they are linked)."""
        if self.master is not None and t1 > t0:
            self.master.setXRange(t0, t1, padding=0)

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
                labelOpts={"position": 0.97, "color": color, "anchors": [(0, 0), (0, 0)]},
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
        for item in self.curves.values():
            item.setData([], [])
        self.drop_markers_before(float("inf"))
