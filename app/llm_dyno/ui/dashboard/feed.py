"""Telemetry into the dashboard: samplers on their own threads, samples as queued Qt signals.

The core samplers call their sinks from the sampling thread; the sinks here only emit a signal, so
Qt queues each sample to the GUI thread, where :func:`metrics_values` / :func:`gpu_values` turn it
into named numbers for the :class:`~llm_dyno.core.telemetry.series.SeriesSet`. Sample times are
``time.monotonic()``; the plots use wall-clock seconds (DateAxisItem), hence ``wall_time``.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Signal

from llm_dyno.core.telemetry.metrics import MetricsSample, MetricsSampler
from llm_dyno.core.telemetry.nvml import GpuReading, GpuSample, GpuSampler

METRICS_INTERVAL_S = 1.0
GPU_INTERVAL_S = 0.5


def wall_time(monotonic_t: float) -> float:
    """A ``time.monotonic()`` timestamp of this process as Unix seconds."""
    return monotonic_t + (time.time() - time.monotonic())


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def metrics_values(sample: MetricsSample) -> dict[str, float | None]:
    """The plotted numbers of one metrics sample (None where the server gives none)."""
    snap, rates = sample.snapshot, sample.rates
    out: dict[str, float | None] = {}
    if snap is not None:
        out.update(kv_pct=_pct(snap.kv_cache_usage), running=snap.running, waiting=snap.waiting)
    if rates is not None and not rates.reset:
        out.update(gen_tps=rates.generation_tps, prompt_tps=rates.prompt_tps)
        # Acceptance only exists while drafting: skip idle intervals (no gap) so the line joins the
        # intervals that had drafts, like the per-position lines do.
        if rates.acceptance_rate is not None:
            out["acceptance_pct"] = _pct(rates.acceptance_rate)
        if rates.mean_acceptance_length is not None:
            out["mean_acc_len"] = rates.mean_acceptance_length
        for i, p in enumerate(rates.per_position or ()):
            out[f"acc_pos{i + 1}_pct"] = _pct(p)
    return out


def gpu_values(reading: GpuReading) -> dict[str, float | None]:
    """The plotted numbers of one GPU reading."""
    mem = None
    if reading.mem_used_bytes is not None and reading.mem_total_bytes:
        mem = 100.0 * reading.mem_used_bytes / reading.mem_total_bytes
    return {
        "power_w": reading.power_w,
        "power_limit_w": reading.enforced_limit_w or reading.power_limit_w,
        "util_pct": reading.util_gpu_pct,
        "temp_c": reading.temperature_c,
        "sm_clock_mhz": None if reading.sm_clock_mhz is None else float(reading.sm_clock_mhz),
        "sm_clock_max_mhz": None if reading.max_sm_clock_mhz is None else float(reading.max_sm_clock_mhz),
        "mem_used_pct": mem,
    }


class TelemetryFeed(QObject):
    """Owns the samplers of one watched server; re-emits their samples on the GUI thread."""

    metricsSampled = Signal(object)  # MetricsSample
    gpuSampled = Signal(object)  # GpuSample

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._metrics: MetricsSampler | None = None
        self._gpu: GpuSampler | None = None

    @property
    def running(self) -> bool:
        """Whether a sampler is running."""
        return any(s is not None and s.running for s in (self._metrics, self._gpu))

    def start(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        gpu_index: int | None = 0,
        metrics_interval_s: float = METRICS_INTERVAL_S,
        gpu_interval_s: float = GPU_INTERVAL_S,
    ) -> None:
        """Watch ``base_url`` (and GPU ``gpu_index`` when not None); stops what ran before."""
        self.stop()
        self._metrics = MetricsSampler(
            base_url, self.metricsSampled.emit, interval_s=metrics_interval_s, api_key=api_key
        )
        self._metrics.start()
        if gpu_index is not None:
            self._gpu = GpuSampler(self.gpuSampled.emit, interval_s=gpu_interval_s, gpus=(gpu_index,))
            self._gpu.start()

    def stop(self) -> None:
        """Stop the samplers (waits for a tick in progress; at most a scrape timeout)."""
        for sampler in (self._metrics, self._gpu):
            if sampler is not None:
                sampler.stop(timeout_s=5.0)
        self._metrics = self._gpu = None


__all__ = ["GpuSample", "TelemetryFeed", "gpu_values", "metrics_values", "wall_time"]
