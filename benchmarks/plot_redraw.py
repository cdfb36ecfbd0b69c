"""Redraw cost of the live dashboard: 1 h of data at 4 Hz in every curve, redrawn at 10 fps.

Builds the real :class:`~llm_dyno.ui.dashboard.Dashboard` offscreen, fills each series with 14,400
points (1 h at 4 Hz), shows the "1 h" window (every point in view: the worst case) and, for
``--seconds``, appends one new sample to every series per 100 ms tick. With ``--every-frame`` each
tick redraws (data, decimation, scrolling to the clock, paint) instead of waiting until a pixel
would change. Reports the CPU used by the whole process (``time.process_time`` delta / wall time)
as % of one core, and the load average around the run. ``--plots 6`` shows only the first six plots
(the issue's target is six plots). ``--baseline`` alternates the app with stock pyqtgraph drawing the
same curves (clip to view, automatic peak downsampling, auto range), a quarter of the time each
turn, and reports their ratio from that one run. Usage::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/plot_redraw.py [--seconds 20] [--window "1 h"]
        [--every-frame] [--plots 6] [--baseline]

To compare with another version of the dashboard, alternate runs with ``PYTHONPATH=OTHER/app``
(a copy of the tree; the installed package is the one on the path first).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget

POINTS = 14_400  # 1 h at 4 Hz


def values(i: int) -> dict[str, float]:
    """One sample of every plotted series (smooth but never constant)."""
    x = i / 40.0
    return {
        "gen_tps": 900 + 300 * math.sin(x), "prompt_tps": 2000 + 900 * math.sin(x / 3),
        "running": 8 + 4 * math.sin(x / 5), "waiting": max(0.0, 3 * math.sin(x / 7)),
        "acceptance_pct": 62 + 10 * math.sin(x / 2), "mean_acceptance_length": 2.8 + 0.4 * math.sin(x / 2),
        "acc_pos1_pct": 80 + 5 * math.sin(x), "acc_pos2_pct": 60 + 5 * math.sin(x),
        "acc_pos3_pct": 40 + 5 * math.sin(x),
        "power_w": 550 + 140 * math.sin(x / 4), "power_limit_w": 700.0,
        "util_pct": 90 + 9 * math.sin(x), "temp_c": 60 + 8 * math.sin(x / 9),
        "kv_pct": 40 + 30 * math.sin(x / 11), "sm_clock_mhz": 1700 + 250 * math.sin(x),
        "sm_clock_max_mhz": 1980.0,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--window", default="1 h", help='"1 min", "5 min", "15 min", "1 h" or "All"')
    ap.add_argument("--size", default="1280x800")
    ap.add_argument(
        "--every-frame", action="store_true", help="re-set every curve on every tick (no pixel throttle)"
    )
    ap.add_argument("--profile", action="store_true", help="print where the time of the timed part went")
    ap.add_argument("--plots", type=int, default=8, help="how many plots to show (the issue's target: 6)")
    ap.add_argument(
        "--baseline", action="store_true",
        help="alternate with stock pyqtgraph drawing the same plots, for a ratio measured in one run",
    )  # fmt: skip
    args = ap.parse_args()
    app = QApplication([])
    from llm_dyno.ui import theme
    from llm_dyno.ui.dashboard import Dashboard
    from llm_dyno.ui.dashboard.plot_specs import position_curve

    theme.apply(app, dark=False)
    dash = Dashboard()
    dash.set_gpu_available(None)
    for i in (1, 2, 3):
        dash.plots.add_curve("acceptance", position_curve(i))
    now = time.time()
    t0 = now - POINTS / 4
    for i in range(POINTS):
        dash.series.append_many(t0 + i / 4, values(i))
    w, h = (int(x) for x in args.size.split("x"))
    dash.resize(w, h)
    dash.show()
    dash.set_window(args.window)
    dash.live = True  # follow the wall clock, as for a watched server
    dash.plots.show_only(dash.plots.visible_plots()[: args.plots])
    for _ in range(10):
        app.processEvents()
    curves = len(dash.plots.visible_series())
    counter = {"i": POINTS, "frames": 0}

    def tick() -> None:
        counter["i"] += 1
        dash.series.append_many(time.time(), values(counter["i"]))
        dash._dirty = True  # what feed_metrics / feed_gpu do

    feeder = QTimer()
    feeder.setInterval(100)
    feeder.timeout.connect(tick)
    orig = dash.redraw

    redraw_cpu = [0.0]

    def counted() -> None:
        counter["frames"] += 1
        c = time.process_time()
        orig()
        redraw_cpu[0] += time.process_time() - c

    dash.redraw = counted  # type: ignore[method-assign]  # the timer's _tick calls it when it redraws
    if args.every_frame:  # the worst case: every 100 ms tick re-sets every curve and scrolls
        dash.pixel_throttle = False
        dash.timer.timeout.disconnect()
        dash.timer.timeout.connect(counted)
    prof = cProfile.Profile() if args.profile else None
    if prof is not None:
        prof.enable()
    load_before = os.getloadavg()
    stock = stock_grid(dash, w, h) if args.baseline else None
    # phases, alternating when there is a baseline so that machine noise hits both alike
    phases = ["app", "stock", "app", "stock"] if stock is not None else ["app"]
    spent = {"app": [0.0, 0.0], "stock": [0.0, 0.0]}  # cpu, wall
    frames = {"app": 0, "stock": 0}
    feeder.start()
    for phase in phases:
        start_frames = counter["frames"]
        if phase == "app":
            dash.show()
            dash.timer.start()
        else:
            assert stock is not None
            stock.show()
        for _ in range(5):
            app.processEvents()
        c0, w0 = time.process_time(), time.perf_counter()
        QTimer.singleShot(int(args.seconds / len(phases) * 1000), app.quit)
        app.exec()  # the app's own event loop: no polling of ours in the figure
        spent[phase][0] += time.process_time() - c0
        spent[phase][1] += time.perf_counter() - w0
        if phase == "app":
            frames["app"] += counter["frames"] - start_frames
            dash.timer.stop()
            if stock is not None:
                dash.hide()
        else:
            assert stock is not None
            frames["stock"] += stock.frames_and_reset()
            stock.hide()
    cpu, wall = spent["app"]
    if prof is not None:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    n = len(dash.plots.curve_data("gen_tps")[0])
    drawn = int(np.max([len(c.getData()[0]) for c in dash.plots.curves.values()]))
    result = {
        "plots": len(dash.plots.visible_plots()), "curves": curves, "points_per_curve": n,
        "window": args.window, "mode": "every frame" if args.every_frame else "pixel throttle",
        "data_redraws": frames["app"], "redraws_per_s": round(frames["app"] / wall, 2),
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cpu_pct_of_one_core": round(100 * cpu / wall, 1),
        "of_which_data_and_decimation_pct": round(100 * redraw_cpu[0] / wall, 1),
        "target_pct": 10.0, "points_drawn_max": drawn,
        "load_avg_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }  # fmt: skip
    if stock is not None:
        s_cpu, s_wall = spent["stock"]
        result["stock_pyqtgraph"] = {
            "redraws_per_s": round(frames["stock"] / s_wall, 2),
            "cpu_pct_of_one_core": round(100 * s_cpu / s_wall, 1),
            "app_over_stock": round((cpu / wall) / (s_cpu / s_wall), 3),
        }
    print(json.dumps(result, indent=2))


class StockGrid(QWidget):
    """The same plots and curves drawn the way pyqtgraph offers out of the box, for a same-run ratio:
    PlotDataItems with clip-to-view and automatic peak downsampling, X-linked, y auto-ranged, every
    curve re-set from its series and the range moved on each 100 ms tick."""

    def __init__(self, dash: object, width: int, height: int) -> None:
        import pyqtgraph as pg
        from PySide6.QtWidgets import QGridLayout

        super().__init__()
        self.dash = dash
        self.resize(width, height)
        grid = QGridLayout(self)
        self.items: list[tuple[str, object]] = []
        master = None
        plots = dash.plots  # type: ignore[attr-defined]
        for key in plots.visible_plots():
            spec = plots.specs[key]
            w = pg.PlotWidget(axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
            grid.addWidget(w, spec.row, spec.col)
            item = w.getPlotItem()
            if master is None:
                master = item
            else:
                item.setXLink(master)
            for series, plot in plots.curve_plot.items():
                if plot == key:
                    curve = item.plot(
                        pen=plots.curve_specs[series].color, clipToView=True, autoDownsample=True,
                        downsampleMethod="peak", skipFiniteCheck=True,
                    )  # fmt: skip
                    self.items.append((series, curve))
        self.master = master
        self.frames = 0
        self.timer = QTimer(self)
        self.timer.setInterval(100)
        self.timer.timeout.connect(self.redraw)

    def redraw(self) -> None:
        self.frames += 1
        window = self.dash.window_s  # type: ignore[attr-defined]
        for series, curve in self.items:
            t, v = self.dash.series.series(series).recent(window)  # type: ignore[attr-defined]
            curve.setData(t, v)  # type: ignore[attr-defined]
        now = time.time()
        self.master.setXRange(now - window, now, padding=0)  # type: ignore[union-attr]

    def show(self) -> None:
        super().show()
        self.timer.start()

    def hide(self) -> None:
        self.timer.stop()
        super().hide()

    def frames_and_reset(self) -> int:
        n, self.frames = self.frames, 0
        return n


def stock_grid(dash: object, width: int, height: int) -> StockGrid:
    return StockGrid(dash, width, height)


if __name__ == "__main__":
    main()
