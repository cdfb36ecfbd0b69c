"""The crosshair's readout: every visible curve's value at one time, and the events near it."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np

from llm_dyno.ui.dashboard.plots import PlotGrid


def readout_text(plots: PlotGrid, events: list[tuple[float, str, str]], ts: float) -> str:
    """Each visible curve of ``plots`` at time ``ts`` (its nearest sample within a tolerance that
    follows the zoom), then the ``events`` (time, kind, text) near it, after the time of day."""
    lo, hi = plots.x_range()
    tolerance = max(2.5, (hi - lo) / 200)
    parts = []
    for name in plots.visible_series():
        t, v = plots.curve_data(name)
        if not len(t):
            continue
        i = int(np.clip(np.searchsorted(t, ts), 1, len(t) - 1)) if len(t) > 1 else 0
        if len(t) > 1 and abs(t[i - 1] - ts) < abs(t[i] - ts):
            i -= 1
        if abs(t[i] - ts) > tolerance or math.isnan(v[i]):
            continue
        spec = plots.curve_specs[name]
        unit = f" {spec.unit}" if spec.unit else ""
        parts.append(f"{spec.label} {spec.fmt.format(v[i])}{unit}")
    near = [f"⚑ {k}: {x}" for e_t, k, x in events if abs(e_t - ts) <= tolerance]
    stamp = datetime.fromtimestamp(ts).strftime("%H:%M:%S")
    return "  ·  ".join([stamp, *parts, *near]) if parts or near else f"{stamp}  ·  no samples here"
