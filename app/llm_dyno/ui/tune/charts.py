"""The Tune view's charts: wall TPS and tokens/J against the first knob (a line per value of the
other knobs, the knee marked), and wall TPS against mean watts with the Pareto front."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from llm_dyno.core.tune.analysis import TrialSummary, TuneAnalysis
from llm_dyno.core.tune.record import TuneRecord
from llm_dyno.ui import theme
from llm_dyno.ui.bench.charts import _style
from llm_dyno.ui.widgets.empty_views import set_plot_empty as _set_empty

_PALETTE = ("accent", "red", "grey", "text")


def _translucent(color: str) -> QColor:
    q = QColor(color)
    q.setAlpha(210)
    return q


def _x(record: TuneRecord, s: TrialSummary) -> float:
    vary = record.varies[0]
    value = s.trial.value(vary.knob.label) or ""
    try:
        return float(value)
    except ValueError:
        return float(vary.values.index(value)) if value in vary.values else 0.0


KNOB_SIDES = ("left", "bottom", "right")


class KnobChart(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph is untyped
    """Wall TPS (left) and tokens/J (right, dashed) against the first knob, the knee as a star."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self)
        self.setMinimumHeight(220)
        item = self.getPlotItem()
        self._right = pg.ViewBox()
        item.showAxis("right")
        item.scene().addItem(self._right)
        item.getAxis("right").linkToView(self._right)
        item.getAxis("right").enableAutoSIPrefix(False)  # tokens/J read as they are, not "× 0.001"
        self._right.setXLink(item)
        item.vb.sigResized.connect(self._sync)
        self.legend = item.addLegend(offset=(8, 8))
        self.legend.setBrush(pg.mkBrush(_translucent(theme.colors().base)))  # readable over the lines
        self.series: dict[str, list[tuple[float, float]]] = {}  # what is drawn (tests read it)
        self.empty_text: str | None = None
        self.set_tune(None, None)

    def _sync(self) -> None:
        self._right.setGeometry(self.getPlotItem().vb.sceneBoundingRect())
        self._right.linkedViewChanged(self.getPlotItem().vb, self._right.XAxis)

    def set_tune(self, record: TuneRecord | None, analysis: TuneAnalysis | None) -> None:
        """Plot a tune (nothing when None)."""
        c = theme.colors()
        item = self.getPlotItem()
        item.clear()
        self.legend.clear()
        self._right.clear()
        self.series = {}
        if record is None or analysis is None or not record.varies:
            _set_empty(self, "Run a tune: wall TPS and tokens/J against the first knob", KNOB_SIDES)
            return
        _set_empty(self, None, KNOB_SIDES)
        first = record.varies[0]
        item.setLabel(
            "bottom", first.knob.label + (f" ({first.knob.unit})" if first.knob.unit else ""), color=c.muted
        )
        item.setLabel("left", "wall TPS", color=c.accent)
        item.setLabel("right", "tokens/J", color=c.green)
        if not all(_is_number(v) for v in first.values):
            item.getAxis("bottom").setTicks([[(i, v) for i, v in enumerate(first.values)]])
        groups: dict[str, list[TrialSummary]] = {}
        for s in analysis.summaries:
            rest = ", ".join(str(x) for x in s.trial.settings if x.knob != first.knob)
            groups.setdefault(rest, []).append(s)
        for n, (rest, members) in enumerate(groups.items()):
            color = getattr(c, _PALETTE[n % len(_PALETTE)])
            pts = sorted((_x(record, s), s.wall_tps) for s in members if s.wall_tps is not None)
            self.series[rest or "TPS"] = pts
            if pts:
                item.addItem(
                    pg.PlotDataItem(
                        [x for x, _ in pts],
                        [y for _, y in pts],
                        pen=pg.mkPen(color, width=2),
                        symbol="o",
                        symbolBrush=color,
                        symbolPen=c.base,
                        name=(rest or "wall TPS"),
                    )
                )
            tpj = sorted((_x(record, s), s.tokens_per_j) for s in members if s.tokens_per_j is not None)
            self.series[(rest or "TPS") + " tokens/J"] = tpj
            if tpj:
                self._right.addItem(
                    pg.PlotDataItem(
                        [x for x, _ in tpj],
                        [y for _, y in tpj],
                        pen=pg.mkPen(color, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine),
                        symbol="s",
                        symbolSize=6,
                        symbolBrush=color,
                        symbolPen=c.base,
                    )
                )
        # no energy readings (no GPU read): no tokens/J axis with placeholder 0…1 values
        item.showAxis("right", any(pts for name, pts in self.series.items() if name.endswith(" tokens/J")))
        knee = analysis.knee
        if knee is not None and knee.wall_tps is not None:
            item.addItem(
                pg.ScatterPlotItem(
                    [_x(record, knee)],
                    [knee.wall_tps],
                    symbol="star",
                    size=22,
                    brush=pg.mkBrush(c.amber),
                    pen=pg.mkPen(c.base),
                    name=f"knee: {knee.trial.label}",
                )
            )
        self._sync()


def _is_number(value: str) -> bool:
    """Whether a knob value is a number (the x axis is then numeric)."""
    try:
        float(value)
    except ValueError:
        return False
    return True


class ParetoChart(pg.PlotWidget):  # type: ignore[misc]  # pyqtgraph is untyped
    """Every trial as a point of mean watts against wall TPS; the Pareto front joined; the knee a star."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        _style(self)
        self.setMinimumHeight(220)
        self.front: list[tuple[float, float]] = []
        self.empty_text: str | None = None
        self.no_gpu: str | None = None  # why the tuned profile has no GPU to read watts from
        self.set_tune(None, None)

    def set_tune(self, record: TuneRecord | None, analysis: TuneAnalysis | None) -> None:
        """Plot a tune (nothing when None or without power readings)."""
        c = theme.colors()
        item = self.getPlotItem()
        item.clear()
        self.front = []
        item.setLabel("bottom", "mean GPU power (W)", color=c.muted)
        item.setLabel("left", "wall TPS", color=c.accent)
        if record is None or analysis is None:
            _set_empty(self, f"{self.no_gpu}: no watts to plot TPS against" if self.no_gpu else
                       "Run a tune: each trial's wall TPS against its mean GPU power")  # fmt: skip
            return
        points = [s for s in analysis.summaries if s.wall_tps is not None and s.mean_power_w is not None]
        if not points:
            _set_empty(self, "no power readings: nothing to plot against watts (no GPU read)")
            return
        _set_empty(self, None)
        item.addItem(
            pg.ScatterPlotItem(
                [s.mean_power_w for s in points],
                [s.wall_tps for s in points],
                size=9,
                brush=pg.mkBrush(c.grey),
                pen=pg.mkPen(c.base),
            )
        )
        for s in points:
            text = pg.TextItem(str(s.trial.index), color=c.muted, anchor=(-0.3, 0.5))
            text.setPos(s.mean_power_w, s.wall_tps)
            item.addItem(text)
        front = [analysis.summary(t) for t in analysis.pareto]
        self.front = [(s.mean_power_w or 0.0, s.wall_tps or 0.0) for s in front]
        if self.front:
            item.addItem(
                pg.PlotDataItem(
                    [x for x, _ in self.front],
                    [y for _, y in self.front],
                    pen=pg.mkPen(c.accent, width=2),
                    symbol="o",
                    symbolBrush=c.accent,
                    symbolPen=c.base,
                    name="Pareto front",
                )
            )
        knee = analysis.knee
        if knee is not None and knee.mean_power_w is not None and knee.wall_tps is not None:
            item.addItem(
                pg.ScatterPlotItem(
                    [knee.mean_power_w],
                    [knee.wall_tps],
                    symbol="star",
                    size=22,
                    brush=pg.mkBrush(c.amber),
                    pen=pg.mkPen(c.base),
                )
            )
