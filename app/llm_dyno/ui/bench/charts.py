"""pyqtgraph charts of the benchmark view: per-prompt spread of runs, and the power-cap sweep curve."""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from llm_dyno.core.bench.result import BenchRun
from llm_dyno.core.bench.stats import summarize
from llm_dyno.core.bench.sweep import SweepResult
from llm_dyno.ui import theme
from llm_dyno.ui.bench.format import METRIC_LABELS
from llm_dyno.ui.widgets.empty_views import set_plot_empty


def _style(plot: pg.PlotWidget) -> None:
    c = theme.colors()
    plot.setBackground(c.base)
    item = plot.getPlotItem()
    for name in ("left", "bottom", "right"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(c.border))
        axis.setTextPen(pg.mkPen(c.muted))
    item.showGrid(x=False, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(x=False, y=False)
    plot.hideButtons()


def _alpha(color: str, alpha: int) -> QColor:
    q = QColor(color)
    q.setAlpha(alpha)
    return q


def _value(run: BenchRun, metric: str) -> float | None:
    if metric == "tokens_per_j":
        return run.energy.tokens_per_j if run.energy is not None else None
    v = getattr(run, metric, None)
    return float(v) if isinstance(v, int | float) else None


class SpreadChart(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph is untyped
    """Each prompt's runs as points (warm-ups hollow), with the measured runs' mean ± std as a band."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self)
        self.metric = "wall_tps"
        self.runs: list[BenchRun] = []
        self.setMinimumHeight(180)
        self._redraw()

    def set_runs(self, runs: Sequence[BenchRun], metric: str | None = None) -> None:
        """Redraw for these runs (in order; prompts keep their first-seen order)."""
        self.runs = list(runs)
        if metric is not None:
            self.metric = metric
        self._redraw()

    def _redraw(self) -> None:
        c = theme.colors()
        item = self.getPlotItem()
        item.clear()
        prompts: list[str] = []
        for r in self.runs:
            if r.prompt not in prompts:
                prompts.append(r.prompt)
        if not prompts:
            set_plot_empty(self, "No runs yet: each run of the benchmark shows here as a point per prompt")
            return
        set_plot_empty(self, None)
        item.getAxis("bottom").setTicks([[(i, p) for i, p in enumerate(prompts)]])
        item.setLabel("left", METRIC_LABELS.get(self.metric, self.metric), color=c.muted)
        for i, prompt in enumerate(prompts):
            runs = [r for r in self.runs if r.prompt == prompt]
            measured = [(r, v) for r in runs if not r.warmup and (v := _value(r, self.metric)) is not None]
            warm = [v for r in runs if r.warmup and (v := _value(r, self.metric)) is not None]
            s = summarize([v for _, v in measured])
            if s is not None:
                band = pg.BarGraphItem(
                    x=[i],
                    y0=[s.mean - s.std],
                    height=[max(2 * s.std, 1e-9)],
                    width=0.5,
                    brush=_alpha(c.accent, 45),
                    pen=pg.mkPen(_alpha(c.accent, 90)),
                )
                item.addItem(band)
                item.addItem(
                    pg.PlotDataItem([i - 0.25, i + 0.25], [s.mean, s.mean], pen=pg.mkPen(c.accent, width=2))
                )
            n = len(measured)
            xs = [i - 0.15 + (0.3 * k / (n - 1) if n > 1 else 0.15) for k in range(n)]
            item.addItem(
                pg.ScatterPlotItem(
                    xs, [v for _, v in measured], size=8, brush=pg.mkBrush(c.accent), pen=pg.mkPen(c.base)
                )
            )
            if warm:
                item.addItem(
                    pg.ScatterPlotItem(
                        [i - 0.35] * len(warm),
                        warm,
                        size=7,
                        brush=pg.mkBrush(None),
                        pen=pg.mkPen(c.grey, width=1.5),
                    )
                )
        item.setXRange(-0.6, max(len(prompts), 1) - 0.4, padding=0)
        item.enableAutoRange(axis="y")


SIDES = ("left", "bottom", "right")


class SweepChart(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph is untyped
    """Throughput (left axis) and tokens per joule (right axis) against the cap, with the knee marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self)
        self.setMinimumHeight(200)
        item = self.getPlotItem()
        self._right = pg.ViewBox()
        item.showAxis("right")
        item.scene().addItem(self._right)
        item.getAxis("right").linkToView(self._right)
        self._right.setXLink(item)
        item.vb.sigResized.connect(self._sync)
        c = theme.colors()
        item.setLabel("bottom", "power cap (W)", color=c.muted)
        item.setLabel("left", "wall TPS", color=c.accent)
        item.setLabel("right", "tokens/J", color=c.green)
        self.set_sweep(None)

    def _sync(self) -> None:
        self._right.setGeometry(self.getPlotItem().vb.sceneBoundingRect())
        self._right.linkedViewChanged(self.getPlotItem().vb, self._right.XAxis)

    def set_sweep(self, sweep: SweepResult | None) -> None:
        """Plot the sweep's points (nothing when None)."""
        c = theme.colors()
        item = self.getPlotItem()
        item.clear()
        self._right.clear()
        if sweep is None or not sweep.points:
            set_plot_empty(
                self, "No sweep yet: Run sweep plots wall TPS and tokens/J against each cap", SIDES
            )
            return
        set_plot_empty(self, None, SIDES)
        caps = [p.cap_w for p in sweep.points]
        tps = [p.throughput for p in sweep.points]
        pts = [(cap, t) for cap, t in zip(caps, tps, strict=True) if t is not None]
        if pts:
            item.addItem(
                pg.PlotDataItem(
                    [x for x, _ in pts],
                    [y for _, y in pts],
                    pen=pg.mkPen(c.accent, width=2),
                    symbol="o",
                    symbolBrush=c.accent,
                    symbolPen=c.base,
                )
            )
        tpj: list[tuple[float, float]] = []
        for p in sweep.points:
            values = [v for pr in p.result.prompts if (v := p.tokens_per_j(pr.name)) is not None]
            if values:
                tpj.append((p.cap_w, sum(values) / len(values)))
        if tpj:
            self._right.addItem(
                pg.PlotDataItem(
                    [x for x, _ in tpj],
                    [y for _, y in tpj],
                    pen=pg.mkPen(c.green, width=2, style=pg.QtCore.Qt.PenStyle.DashLine),
                    symbol="s",
                    symbolBrush=c.green,
                    symbolPen=c.base,
                )
            )
        knee = sweep.recommended_cap()
        if knee is not None:
            line = pg.InfiniteLine(
                knee,
                angle=90,
                pen=pg.mkPen(c.amber, width=2, style=pg.QtCore.Qt.PenStyle.DotLine),
                label=f"knee {knee:.0f} W",
                labelOpts={"color": c.amber, "position": 0.9},
            )
            item.addItem(line)
        self._sync()
