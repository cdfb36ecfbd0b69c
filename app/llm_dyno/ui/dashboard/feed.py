"""Telemetry into the dashboard: samplers on their own threads, samples as queued Qt signals.

The core samplers call their sinks from the sampling thread; the sinks here only emit a signal, so
Qt queues each sample to the GUI thread, where :func:`metrics_values` / :func:`gpu_values` (the GPU
figures of :data:`~llm_dyno.core.telemetry.live_metrics.GPU_METRICS`) turn it into named numbers for
the :class:`~llm_dyno.core.telemetry.series.SeriesSet`. Sample times are ``time.monotonic()``; the
plots use wall-clock seconds (DateAxisItem), hence ``wall_time``.

GPUs are read through NVML on this machine, or with nvidia-smi in the server's container when it runs
on another machine (see :mod:`llm_dyno.core.runtime.gpu_source`); both give the same samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.runtime.gpu_source import GpuSource
from llm_dyno.core.runtime.remote_gpu import ContainerGpuSampler
from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import gpu_values, position_values, ready
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample, MetricsSampler
from llm_dyno.core.telemetry.nvml import GpuSample, GpuSampler

METRICS_INTERVAL_S = 1.0
GPU_INTERVAL_S = 0.5
CONTAINER_GPU_INTERVAL_S = 1.0  # each reading is a `docker exec` (over the network for a remote host)


def wall_time(monotonic_t: float) -> float:
    """A ``time.monotonic()`` timestamp of this process as Unix seconds."""
    return monotonic_t + (time.time() - time.monotonic())


def metrics_values(sample: MetricsSample) -> dict[str, float | None]:
    """The numbers of one metrics sample, by series key (:data:`LIVE_METRICS`, then per position).

    A plotted metric whose inputs are there but whose counter is not gives None (a gap); a
    speculative-decoding one is left out while nothing is drafted, so its line joins the intervals
    that had drafts instead of breaking at each idle one.
    """
    out: dict[str, float | None] = {}
    for metric in live_metrics.LIVE_METRICS:
        value = metric.value(sample)
        gap = metric.plot is not None and not metric.spec_decode and ready(metric, sample)
        if value is not None or gap:
            out[metric.key] = value
    out.update(position_values(sample))
    return out


class _Running:
    """The feed's samplers, held apart from the QObject: when Qt deletes the feed (its window
    closed), ``destroyed`` stops them, and a sample that races the deletion stops its own sampler
    instead of emitting on a deleted object."""

    def __init__(self) -> None:
        self.samplers: list[Any] = []

    def stop(self, timeout_s: float = 5.0) -> None:
        for sampler in self.samplers:
            sampler.stop(timeout_s=timeout_s)
        self.samplers = []

    def sink(self, emit: Callable[[Any], None]) -> Callable[[Any], None]:
        def send(sample: Any) -> None:
            try:
                emit(sample)
            except RuntimeError:  # the feed's C++ object is gone: nobody is listening any more
                self.stop(timeout_s=0)

        return send


class TelemetryFeed(QObject):
    """Owns the samplers of one watched server; re-emits their samples on the GUI thread."""

    metricsSampled = Signal(object)  # MetricsSample
    gpuSampled = Signal(object)  # GpuSample

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._metrics: MetricsSampler | None = None
        self._gpu: GpuSampler | ContainerGpuSampler | None = None
        self._running = _Running()
        running = self._running
        self.destroyed.connect(lambda *_: running.stop(timeout_s=0))

    @property
    def running(self) -> bool:
        """Whether a sampler is running."""
        return any(s is not None and s.running for s in (self._metrics, self._gpu))

    @property
    def metrics_sampler(self) -> MetricsSampler | None:
        """The /metrics sampler in use (None when nothing is watched)."""
        return self._metrics

    @property
    def gpu_sampler(self) -> GpuSampler | ContainerGpuSampler | None:
        """The GPU sampler in use (None when no GPU is watched)."""
        return self._gpu

    def start(
        self,
        endpoint: Endpoint,
        *,
        gpus: GpuSource | None = None,
        metrics_interval_s: float = METRICS_INTERVAL_S,
        gpu_interval_s: float | None = None,
    ) -> None:
        """Watch ``endpoint`` (with its key; none when it cannot be resolved: the samples then say
        401) and the GPUs of ``gpus`` (when not None); stops what ran before.

        ``gpu_interval_s`` None: :data:`GPU_INTERVAL_S` for NVML, :data:`CONTAINER_GPU_INTERVAL_S`
        for readings through a container.
        """
        self.stop()
        sink = self._running.sink
        self._metrics = MetricsSampler(
            endpoint, sink(self.metricsSampled.emit), interval_s=metrics_interval_s
        )
        self._running.samplers.append(self._metrics)
        self._metrics.start()
        if gpus is not None and gpus.container is not None:
            self._gpu = ContainerGpuSampler(
                sink(self.gpuSampled.emit), container=gpus.container, host=gpus.docker_host, gpus=gpus.gpus,
                interval_s=gpu_interval_s or CONTAINER_GPU_INTERVAL_S,
            )  # fmt: skip
        elif gpus is not None:
            self._gpu = GpuSampler(
                sink(self.gpuSampled.emit), interval_s=gpu_interval_s or GPU_INTERVAL_S, gpus=gpus.gpus
            )
        if self._gpu is not None:
            self._running.samplers.append(self._gpu)
            self._gpu.start()

    def stop(self) -> None:
        """Stop the samplers (waits for a tick in progress; at most a scrape timeout)."""
        self._running.stop(timeout_s=5.0)
        self._metrics = self._gpu = None


__all__ = ["GpuSample", "TelemetryFeed", "gpu_values", "metrics_values", "wall_time"]
