"""What the dashboard plots: each plot's title, place in the grid and curves (names, units, colours)."""

from __future__ import annotations

from dataclasses import dataclass

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
        # utilisation and temperature apart: % and °C on one axis read as one scale
        PlotSpec("gpu", "GPU utilisation · %", 2, 1, (
            CurveSpec("util_pct", "util", "%", BLUE, fmt="{:.0f}"),
        ), gpu=True),
        PlotSpec("temp", "GPU temperature · °C", 3, 0, (
            CurveSpec("temp_c", "temp", "°C", ORANGE, fmt="{:.0f}"),
        ), gpu=True, y_min=None),
        PlotSpec("clock", "SM clock · MHz", 3, 1, (
            CurveSpec("sm_clock_mhz", "SM clock", "MHz", PURPLE, fmt="{:.0f}"),
            CurveSpec("sm_clock_max_mhz", "max", "MHz", GREY, dashed=True, fmt="{:.0f}"),
        ), gpu=True),
        PlotSpec("kv", "KV cache use · %", 4, 0, (
            CurveSpec("kv_pct", "KV cache", "%", GREEN),
        ), span=2),
    ]  # fmt: skip


def position_curve(i: int) -> CurveSpec:
    """The per-position acceptance curve of draft position ``i`` (1-based)."""
    color = POSITION_COLORS[(i - 1) % len(POSITION_COLORS)]
    return CurveSpec(f"acc_pos{i}_pct", f"pos {i}", "%", color, width=1.0)
