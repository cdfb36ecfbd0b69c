"""What the dashboard plots: each plot's title, place in the grid and curves (names, units, colours).

The plots come from :data:`~llm_dyno.core.telemetry.live_metrics.LIVE_METRICS` and, for the GPU,
:data:`~llm_dyno.core.telemetry.live_metrics.GPU_METRICS`; this file adds their colours and places.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import GpuMetric, LiveMetric, position_key

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
    span: int = 1  # grid columns it covers

    @property
    def columns(self) -> range:
        """The grid columns the plot covers."""
        return range(self.col, self.col + self.span)


# The look of the live metrics' curves (any colour of the palette for a metric not named here).
METRIC_COLORS = {
    "gen_tps": BLUE, "prompt_tps": ORANGE, "running": GREEN, "waiting": ORANGE,
    "acceptance_pct": PURPLE, "mean_acceptance_length": TEAL, "kv_pct": GREEN,
    "power_w": RED, "util_pct": BLUE, "temp_c": ORANGE, "sm_clock_mhz": PURPLE,
}  # fmt: skip
# Reference lines (a limit, a maximum): dashed and grey beside the figure they bound.
REFERENCE_LINES = frozenset({"power_limit_w", "sm_clock_max_mhz"})
# Where each plot sits: (row, column, columns covered). A plot not named here (a new live metric's)
# takes a row of its own below these.
PLACES: dict[str, tuple[int, int, int]] = {
    "tokens": (0, 0, 1), "requests": (0, 1, 1), "acceptance": (1, 0, 1), "length": (1, 1, 1),
    "power": (2, 0, 1), "gpu": (2, 1, 1), "temp": (3, 0, 1), "clock": (3, 1, 1), "kv": (4, 0, 2),
}  # fmt: skip
_PALETTE = (BLUE, ORANGE, GREEN, PURPLE, RED, TEAL)


def metric_curve(metric: LiveMetric | GpuMetric, index: int = 0) -> CurveSpec:
    """The curve of a live or GPU metric (``index``: its place in its registry, for a default colour)."""
    if metric.key in REFERENCE_LINES:
        return CurveSpec(metric.key, metric.label, metric.unit, GREY, dashed=True, fmt=metric.fmt)
    color = METRIC_COLORS.get(metric.key, _PALETTE[index % len(_PALETTE)])
    return CurveSpec(metric.key, metric.label, metric.unit, color, fmt=metric.fmt)


def _gpu_plots(
    metrics: tuple[GpuMetric, ...],
) -> list[tuple[str, str, tuple[CurveSpec, ...], float | None]]:
    # GPU readings come from NVML or nvidia-smi, not /metrics: their own registry, same grouping by plot
    curves: dict[str, list[CurveSpec]] = {}
    heads: dict[str, tuple[str, float | None]] = {}
    for i, m in enumerate(metrics):
        if m.plot is not None:
            curves.setdefault(m.plot, []).append(metric_curve(m, i))
            heads.setdefault(m.plot, (m.plot_title, m.y_min))
    return [(key, heads[key][0], tuple(cs), heads[key][1]) for key, cs in curves.items()]


def default_plots(metrics: tuple[LiveMetric, ...] | None = None) -> list[PlotSpec]:
    """The dashboard's plots, two columns: one per plot key of the live metrics (``metrics``, by
    default :data:`LIVE_METRICS`), their curves in registry order, then the GPU plots likewise
    (:data:`GPU_METRICS`)."""
    curves: dict[str, list[CurveSpec]] = {}
    titles: dict[str, str] = {}
    for i, m in enumerate(live_metrics.LIVE_METRICS if metrics is None else metrics):
        if m.plot is not None:
            curves.setdefault(m.plot, []).append(metric_curve(m, i))
            titles.setdefault(m.plot, m.plot_title)
    plots: list[tuple[str, str, tuple[CurveSpec, ...], float | None, bool]]
    plots = [(key, titles[key], tuple(cs), 0.0, False) for key, cs in curves.items()]
    plots += [(key, title, cs, y_min, True) for key, title, cs, y_min in _gpu_plots(live_metrics.GPU_METRICS)]
    places = dict(PLACES)
    free_row = 1 + max(row for row, _c, _s in places.values())
    out: list[PlotSpec] = []
    for key, title, cs, y_min, gpu in plots:
        if key not in places:
            places[key] = (free_row, 0, 2)
            free_row += 1
        row, col, span = places[key]
        out.append(PlotSpec(key, title, row, col, cs, gpu=gpu, y_min=y_min, span=span))
    return out


def position_curve(i: int) -> CurveSpec:
    """The per-position acceptance curve of draft position ``i`` (1-based)."""
    color = POSITION_COLORS[(i - 1) % len(POSITION_COLORS)]
    return CurveSpec(position_key(i), f"pos {i}", "%", color, width=1.0)
