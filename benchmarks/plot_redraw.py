"""Redraw cost of the live dashboard: 1 h of data at 4 Hz in every curve, redrawn at 10 fps.

Builds the real :class:`~llm_dyno.ui.dashboard.Dashboard` offscreen, fills each series with 14,400
points (1 h at 4 Hz), shows the "1 h" window (every point in view: the worst case) and, for
``--seconds``, appends one new sample to every series per frame so that every 100 ms redraw re-sets
the data of every curve and scrolls the time axis. Reports the CPU used by the whole process
(``time.process_time`` delta / wall time) as % of one core, and the load average around the run
(on a busy machine, compare only runs interleaved in one session). Usage::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/plot_redraw.py [--seconds 20] [--window "1 h"]

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
from PySide6.QtWidgets import QApplication

POINTS = 14_400  # 1 h at 4 Hz


def values(i: int) -> dict[str, float]:
    """One sample of every plotted series (smooth but never constant)."""
    x = i / 40.0
    return {
        "gen_tps": 900 + 300 * math.sin(x), "prompt_tps": 2000 + 900 * math.sin(x / 3),
        "running": 8 + 4 * math.sin(x / 5), "waiting": max(0.0, 3 * math.sin(x / 7)),
        "acceptance_pct": 62 + 10 * math.sin(x / 2), "mean_acc_len": 2.8 + 0.4 * math.sin(x / 2),
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
    args = ap.parse_args()
    app = QApplication([])
    from llm_dyno.ui import theme
    from llm_dyno.ui.dashboard import Dashboard
    from llm_dyno.ui.dashboard.plots import position_curve

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
    c0, w0 = time.process_time(), time.perf_counter()
    feeder.start()
    QTimer.singleShot(int(args.seconds * 1000), app.quit)
    app.exec()  # the app's own event loop: no polling of ours in the figure
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    if prof is not None:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    n = len(dash.plots.curve_data("gen_tps")[0])
    drawn = int(np.max([len(c.getData()[0]) for c in dash.plots.curves.values()]))
    result = {
        "plots": len(dash.plots.visible_plots()), "curves": curves, "points_per_curve": n,
        "window": args.window, "mode": "every frame" if args.every_frame else "pixel throttle",
        "data_redraws": counter["frames"], "redraws_per_s": round(counter["frames"] / wall, 2),
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cpu_pct_of_one_core": round(100 * cpu / wall, 1),
        "of_which_data_and_decimation_pct": round(100 * redraw_cpu[0] / wall, 1),
        "target_pct": 10.0, "points_drawn_max": drawn,
        "load_avg_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }  # fmt: skip
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
