"""Bounded ring buffers: fine ring for the last hour, min/max/mean buckets for 24 h."""

from __future__ import annotations

import math

import numpy as np

from llm_dyno.core.telemetry.series import SeriesSet, TimeSeries


def test_recent_in_order_and_bounded() -> None:
    s = TimeSeries("p", fine_span_s=10, max_rate_hz=1, bucket_s=5, coarse_span_s=100)
    for i in range(25):
        s.append(float(i), float(i * 2))
    t, v = s.recent()
    assert list(t) == [float(i) for i in range(15, 25)]
    assert list(v) == [2.0 * i for i in range(15, 25)]
    t3, _ = s.recent(3)
    assert list(t3) == [21.0, 22.0, 23.0, 24.0]
    assert s.latest() == (24.0, 48.0)
    assert len(s) == 10


def test_decimation_keeps_peaks_and_means() -> None:
    s = TimeSeries("p", fine_span_s=4, max_rate_hz=1, bucket_s=10, coarse_span_s=30)
    for i in range(45):
        s.append(float(i), 1000.0 if i == 13 else float(i % 10))
    d = s.decimated()
    # buckets [0,10) [10,20) [20,30) [30,40) closed; the ring holds the last 3
    assert list(d.t) == [10.0, 20.0, 30.0]
    assert d.max[0] == 1000.0 and d.min[0] == 0.0
    assert d.mean[1] == 4.5


def test_gaps_and_backwards_time() -> None:
    s = TimeSeries("p", fine_span_s=10, max_rate_hz=1, bucket_s=5)
    s.append(1.0, None)
    s.append(2.0, 3.0)
    s.append(1.5, 99.0)  # older than the last: dropped
    t, v = s.recent()
    assert list(t) == [1.0, 2.0] and math.isnan(v[0]) and v[1] == 3.0


def test_memory_is_preallocated_and_24h_fits() -> None:
    s = TimeSeries("p")  # defaults: 1 h at 4 Hz, 10 s buckets for 24 h
    before = s.nbytes
    for i in range(20000):
        s.append(i * 0.25, float(i))
    assert s.nbytes == before == (14400 * 2 + 8640 * 4) * 8
    sset = SeriesSet()
    sset.append_many(0.0, {f"m{i}": 1.0 for i in range(40)})
    assert sset.nbytes == 40 * before < 100 * 2**20
    assert sset.names()[0] == "m0" and "m39" in sset
    assert np.isfinite(sset.series("m1").recent()[1]).all()
