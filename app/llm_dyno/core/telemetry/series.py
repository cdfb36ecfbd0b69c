"""Bounded time series for live plots: full resolution for the last hour, decimated for a day.

A :class:`TimeSeries` holds two preallocated numpy rings. The *fine* ring keeps every sample (by
default an hour at 4 Hz). Every sample also lands in a *bucket* (default 10 s) whose mean, min and
max go into the *coarse* ring once the bucket closes (by default 24 h of buckets), so peaks survive
decimation (pyqtgraph's ``peak`` downsampling wants exactly that). Memory is fixed at construction
and reported by ``nbytes``. Writes come from one sampler thread; readers get copies.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class _Ring:
    """Fixed-size columns of float64 written round-robin."""

    def __init__(self, capacity: int, columns: int) -> None:
        # np.full writes every page, so nbytes is what the process really holds from the start
        self.data: FloatArray = np.full((columns, capacity), np.nan, dtype=np.float64)
        self.capacity = capacity
        self.count = 0  # total rows ever written

    def push(self, *values: float) -> None:
        i = self.count % self.capacity
        for row, value in enumerate(values):  # scalar stores: several times faster than a slice store
            self.data[row, i] = value
        self.count += 1

    def ordered(self) -> FloatArray:
        """All stored rows, oldest first (a copy)."""
        n = min(self.count, self.capacity)
        if self.count <= self.capacity:
            return self.data[:, :n].copy()
        start = self.count % self.capacity
        return np.concatenate((self.data[:, start:], self.data[:, :start]), axis=1)


@dataclass(frozen=True)
class Decimated:
    """Bucketed history: bucket start times and each bucket's mean, min and max."""

    t: FloatArray
    mean: FloatArray
    min: FloatArray
    max: FloatArray


class TimeSeries:
    """One named quantity over time (timestamps are seconds, e.g. ``time.monotonic()``).

    ``append`` takes None or NaN as a gap. Timestamps must not go backwards; a sample older than
    the last one is dropped (a restarted source restarts its clock, the series does not).
    """

    def __init__(
        self,
        name: str,
        *,
        fine_span_s: float = 3600.0,
        max_rate_hz: float = 4.0,
        bucket_s: float = 10.0,
        coarse_span_s: float = 24 * 3600.0,
    ) -> None:
        self.name = name
        self.bucket_s = bucket_s
        self._fine = _Ring(math.ceil(fine_span_s * max_rate_hz), 2)
        self._coarse = _Ring(math.ceil(coarse_span_s / bucket_s), 4)  # t, mean, min, max
        self._lock = threading.Lock()
        self._last_t = -math.inf
        self._bucket: int | None = None
        self._b_sum = 0.0
        self._b_n = 0
        self._b_min = math.inf
        self._b_max = -math.inf

    @property
    def nbytes(self) -> int:
        """Bytes held by the preallocated arrays (the whole cost; it never grows)."""
        return int(self._fine.data.nbytes + self._coarse.data.nbytes)

    def __len__(self) -> int:
        return min(self._fine.count, self._fine.capacity)

    def append(self, t: float, value: float | None) -> None:
        """Add one sample."""
        v = math.nan if value is None else float(value)
        with self._lock:
            if t < self._last_t:
                return
            self._last_t = t
            self._fine.push(t, v)
            bucket = math.floor(t / self.bucket_s)
            if self._bucket is not None and bucket != self._bucket:
                self._flush()
            self._bucket = bucket
            if not math.isnan(v):
                self._b_sum += v
                self._b_n += 1
                self._b_min = min(self._b_min, v)
                self._b_max = max(self._b_max, v)

    def _flush(self) -> None:
        if self._bucket is None:
            return
        if self._b_n:
            mean, lo, hi = self._b_sum / self._b_n, self._b_min, self._b_max
        else:
            mean = lo = hi = math.nan
        self._coarse.push(self._bucket * self.bucket_s, mean, lo, hi)
        self._b_sum, self._b_n, self._b_min, self._b_max = 0.0, 0, math.inf, -math.inf

    def recent(self, seconds: float | None = None) -> tuple[FloatArray, FloatArray]:
        """Full-resolution ``(t, values)`` of the last ``seconds`` (all that the fine ring holds)."""
        with self._lock:
            rows = self._fine.ordered()
        t, v = rows[0], rows[1]
        if seconds is not None and len(t):
            start = int(np.searchsorted(t, t[-1] - seconds, "left"))  # t is sorted: no mask needed
            t, v = t[start:], v[start:]
        return t, v

    def decimated(self, seconds: float | None = None) -> Decimated:
        """Closed buckets of the last ``seconds`` (up to the coarse span), oldest first."""
        with self._lock:
            rows = self._coarse.ordered()
            last_t = self._last_t
        if seconds is not None and rows.shape[1]:
            rows = rows[:, rows[0] >= last_t - seconds]
        return Decimated(rows[0], rows[1], rows[2], rows[3])

    def latest(self) -> tuple[float, float] | None:
        """The newest ``(t, value)``, or None when empty."""
        with self._lock:
            if not self._fine.count:
                return None
            col = self._fine.data[:, (self._fine.count - 1) % self._fine.capacity]
            return float(col[0]), float(col[1])


class SeriesSet:
    """Named :class:`TimeSeries` sharing one configuration; created on first append."""

    def __init__(self, **series_options: float) -> None:
        self._options = series_options
        self._series: dict[str, TimeSeries] = {}
        self._lock = threading.Lock()

    def series(self, name: str) -> TimeSeries:
        """The series called ``name`` (created empty if new)."""
        with self._lock:
            s = self._series.get(name)
            if s is None:
                s = self._series[name] = TimeSeries(name, **self._options)
            return s

    def append(self, name: str, t: float, value: float | None) -> None:
        """Add one sample to one series."""
        self.series(name).append(t, value)

    def append_many(self, t: float, values: Mapping[str, float | None]) -> None:
        """Add one sample per named value, all at time ``t``."""
        for name, value in values.items():
            self.series(name).append(t, value)

    def names(self) -> list[str]:
        """The series names, in creation order."""
        with self._lock:
            return list(self._series)

    def __iter__(self) -> Iterator[TimeSeries]:
        with self._lock:
            return iter(list(self._series.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._series

    @property
    def nbytes(self) -> int:
        """Bytes held by every series."""
        return sum(s.nbytes for s in self)
