"""What the dashboard plots: each plot's title, place in the grid and curves (names, units, colours).

The live metrics' plots come from :data:`~llm_dyno.core.telemetry.live_metrics.LIVE_METRICS`; this
file adds their colours and places, and the GPU plots.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import LiveMetric, position_key

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
}  # fmt: skip
# Where each plot sits: (row, column, columns covered). A plot not named here (a new live metric's)
# takes a row of its own below these.
PLACES: dict[str, tuple[int, int, int]] = {
    "tokens": (0, 0, 1), "requests": (0, 1, 1), "acceptance": (1, 0, 1), "length": (1, 1, 1),
    "power": (2, 0, 1), "gpu": (2, 1, 1), "temp": (3, 0, 1), "clock": (3, 1, 1), "kv": (4, 0, 2),
}  # fmt: skip
_PALETTE = (BLUE, ORANGE, GREEN, PURPLE, RED, TEAL)


def metric_curve(metric: LiveMetric, index: int = 0) -> CurveSpec:
    """The curve of a live metric (``index``: its place in the registry, for a default colour)."""
    color = METRIC_COLORS.get(metric.key, _PALETTE[index % len(_PALETTE)])
    return CurveSpec(metric.key, metric.label, metric.unit, color, fmt=metric.fmt)


def _gpu_plots() -> list[tuple[str, str, tuple[CurveSpec, ...], float | None]]:
    # GPU readings come from NVML or nvidia-smi, not /metrics: their curves are listed here
    return [
        ("power", "GPU power · W", (
            CurveSpec("power_w", "power", "W", RED, fmt="{:.0f}"),
            CurveSpec("power_limit_w", "limit", "W", GREY, dashed=True, fmt="{:.0f}"),
        ), 0.0),
        # utilisation and temperature apart: % and °C on one axis read as one scale
        ("gpu", "GPU utilisation · %", (CurveSpec("util_pct", "util", "%", BLUE, fmt="{:.0f}"),), 0.0),
        ("temp", "GPU temperature · °C", (CurveSpec("temp_c", "temp", "°C", ORANGE, fmt="{:.0f}"),), None),
        ("clock", "SM clock · MHz", (
            CurveSpec("sm_clock_mhz", "SM clock", "MHz", PURPLE, fmt="{:.0f}"),
            CurveSpec("sm_clock_max_mhz", "max", "MHz", GREY, dashed=True, fmt="{:.0f}"),
        ), 0.0),
    ]  # fmt: skip


def default_plots(metrics: tuple[LiveMetric, ...] | None = None) -> list[PlotSpec]:
    """The dashboard's plots, two columns: one per plot key of the live metrics (``metrics``, by
    default :data:`LIVE_METRICS`), their curves in registry order, and the GPU plots."""
    curves: dict[str, list[CurveSpec]] = {}
    titles: dict[str, str] = {}
    for i, m in enumerate(live_metrics.LIVE_METRICS if metrics is None else metrics):
        if m.plot is not None:
            curves.setdefault(m.plot, []).append(metric_curve(m, i))
            titles.setdefault(m.plot, m.plot_title)
    plots: list[tuple[str, str, tuple[CurveSpec, ...], float | None, bool]]
    plots = [(key, titles[key], tuple(cs), 0.0, False) for key, cs in curves.items()]
    plots += [(key, title, cs, y_min, True) for key, title, cs, y_min in _gpu_plots()]
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
