"""The dashboard's export subject: the visible time range of the shown series, as a table.

The window hands over what it shows (series name -> sample times and values, the visible range); the
writers in :mod:`llm_dyno.core.exports.registry` turn it into CSV or JSON rows, one per timestamp.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

Samples = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


@dataclass(frozen=True)
class SeriesWindow:
    """What the dashboard shows: ``columns`` (series name -> (unix times, values)) within ``t0``–``t1``."""

    columns: Mapping[str, Samples]
    t0: float
    t1: float

    def names(self) -> list[str]:
        """The series, in the order shown."""
        return list(self.columns)

    def rows(self) -> list[tuple[float, dict[str, float]]]:
        """One row per timestamp within the range (the union of every series' times, ascending): the
        time and each series' value at it (a series without a sample then, or a NaN, is absent)."""
        table: dict[float, dict[str, float]] = {}
        for name, (t, v) in self.columns.items():
            keep = (t >= self.t0) & (t <= self.t1)
            for ts, val in zip(t[keep].tolist(), v[keep].tolist(), strict=True):
                if not math.isnan(val):
                    table.setdefault(ts, {})[name] = val
                else:
                    table.setdefault(ts, {})
        return sorted(table.items())


def utc_stamp(ts: float) -> str:
    """A Unix time as ISO 8601 UTC, to the millisecond."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
