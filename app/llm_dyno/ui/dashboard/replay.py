"""Feed a dashboard from recorded samples (JSONL written by the recorders), for screenshots and tests.

Metrics recordings hold ``MetricsSample.to_dict()`` lines (and ``{"event": kind, "t", "text"}``
lines); GPU recordings hold ``{"t", "error", "readings": [GpuReading.to_dict()]}`` lines. Times are
re-based so that the last sample lands at ``end`` (Unix seconds).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.nvml import GpuReading, GpuSample
from llm_dyno.core.telemetry.rates import MetricsRates, RateWindow
from llm_dyno.ui.dashboard.view import Dashboard


def _keep(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def metrics_sample(d: dict[str, Any]) -> MetricsSample:
    """A :class:`MetricsSample` back from its ``to_dict()``."""
    snap = None
    if d.get("snapshot"):
        s = _keep(MetricsSnapshot, d["snapshot"])
        s["spec_accepted_per_pos"] = {int(k): v for k, v in s.get("spec_accepted_per_pos", {}).items()}
        s["model_names"] = tuple(s.get("model_names", ()))
        snap = MetricsSnapshot(**s)
    rates = None
    if d.get("rates"):
        r = _keep(MetricsRates, d["rates"])
        if r.get("per_position") is not None:
            r["per_position"] = tuple(r["per_position"])
        rates = MetricsRates(**r)
    return MetricsSample(d["taken_at"], d["url"], snap, rates, d.get("error"))


def gpu_sample(d: dict[str, Any]) -> GpuSample:
    """A :class:`GpuSample` back from a recorded line."""
    readings = tuple(GpuReading(**_keep(GpuReading, r)) for r in d.get("readings", ()))
    return GpuSample(d["t"], readings, d.get("error"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def replay_metrics(dash: Dashboard, path: Path, end: float, *, events: tuple[str, ...] | None = None) -> int:
    """Feed every metrics sample and event (of the ``events`` kinds; None: all) of a recording.

    Rates are computed again from the recorded snapshots by the live sampler's rate window
    (:class:`~llm_dyno.core.telemetry.rates.RateWindow`), so a replay shows what a live dashboard shows
    now, not the rates stored when it was recorded. Returns the number of samples fed.
    """
    rows = _lines(path)
    last = max(r["t"] for r in rows)
    times = sorted(r["t"] for r in rows if "event" not in r)
    gaps = sorted(b - a for a, b in itertools.pairwise(times) if b > a)
    window = RateWindow.for_interval(gaps[len(gaps) // 2] if gaps else 1.0)
    n = 0
    for r in rows:
        ts = end - (last - r["t"])
        if "event" in r:
            if events is None or r["event"] in events:
                dash.add_event(ts, r["event"], r["text"])
        else:
            sample = metrics_sample(r)
            if sample.snapshot is not None:
                sample = replace(sample, rates=window.add(sample.snapshot))
            dash.feed_metrics(sample, t=ts)
            n += 1
    return n


def replay_gpu(dash: Dashboard, path: Path, end: float, *, stretch: float = 1.0) -> int:
    """Feed every GPU sample of a recording (``stretch`` > 1 spreads it over a longer time)."""
    rows = _lines(path)
    last = max(r["t"] for r in rows)
    for r in rows:
        dash.feed_gpu(gpu_sample(r), t=end - (last - r["t"]) * stretch)
    return len(rows)
