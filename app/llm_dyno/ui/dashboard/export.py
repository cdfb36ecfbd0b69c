"""Export of what the dashboard shows: the visible series as CSV (one row per timestamp)."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from llm_dyno.core.textsafe import csv_cell


def write_csv(path: Path, columns: Mapping[str, tuple[np.ndarray, np.ndarray]], t0: float, t1: float) -> int:
    """Write the samples of ``columns`` (name → (t, v)) within ``t0``–``t1``; returns the row count.

    Rows are the union of all timestamps (Unix seconds), with an ISO time first; a series without a
    sample at a row's time leaves its cell empty.
    """
    names = list(columns)
    table: dict[float, dict[str, float]] = {}
    for name in names:
        t, v = columns[name]
        keep = (t >= t0) & (t <= t1)
        for ts, val in zip(t[keep].tolist(), v[keep].tolist(), strict=True):
            table.setdefault(ts, {})[name] = val
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["time_utc", "unix_s", *(csv_cell(n) for n in names)])
        for ts in sorted(table):
            row = table[ts]
            cells = ["" if (x := row.get(n)) is None or math.isnan(x) else f"{x:.6g}" for n in names]
            stamp = datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
            out.writerow([stamp, f"{ts:.3f}", *cells])
    return len(table)
