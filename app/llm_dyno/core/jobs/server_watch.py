"""The live figures of running servers, as the window's servers overview and ``status --live`` show
them: generation tok/s from ``/metrics`` (the dashboard's sampler and rate window) and the power of
the server's GPUs (the job layer's reader: NVML here, nvidia-smi in the container for a remote engine).

Each :class:`ServerWatch` samples on its own threads and leaves its latest values behind a lock, so
a slow or dead server never blocks whoever shows them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.gpus import gpu_reader, plan_gpus
from llm_dyno.core.runtime.base import ServerHandle, ServerState
from llm_dyno.core.telemetry.sampler import PeriodicSampler

SAMPLE_S = 1.0
# the rate window gives a figure once it spans 2 s of counter changes: a few samples past that
LIVE_WINDOW_S = 3.5


class ServerWatch:
    """The live figures of one server: a /metrics sampler and, when it has GPUs to read, a GPU reader.
    The key is the endpoint's (none when it cannot be resolved: the figures then say it does not answer)."""

    def __init__(
        self,
        endpoint: Endpoint,
        gpu_read: Callable[[], float | None] | None,
        *,
        interval_s: float = SAMPLE_S,
    ) -> None:
        from llm_dyno.core.telemetry.metrics_sampler import MetricsSample, MetricsSampler

        self._lock = threading.Lock()
        self.tps: float | None = None
        self.reachable: bool | None = None
        self.error: str | None = None
        self.power_w: float | None = None

        def on_metrics(sample: MetricsSample) -> None:
            with self._lock:
                self.reachable, self.error = sample.reachable, sample.error
                if sample.rates is not None and not sample.rates.reset:
                    self.tps = sample.rates.generation_tps
                elif not sample.reachable:
                    self.tps = None

        def on_power(watts: float | None) -> None:
            with self._lock:
                self.power_w = watts

        self._samplers: list[PeriodicSampler[Any]] = []
        self._samplers.append(MetricsSampler(endpoint, on_metrics, interval_s=interval_s))
        if gpu_read is not None:
            gpu = PeriodicSampler(gpu_read, on_power, interval_s=interval_s, name="watch-gpu")
            self._samplers.append(gpu)
        for sampler in self._samplers:
            sampler.start()

    def figures(self) -> tuple[float | None, bool | None, float | None]:
        """(generation tok/s, reachable, GPU power W), the latest of each."""
        with self._lock:
            return self.tps, self.reachable, self.power_w

    def stop(self, timeout_s: float = 0) -> None:
        """End the sampling threads (they finish their tick first; ``timeout_s`` waits for them)."""
        for sampler in self._samplers:
            sampler.stop(timeout_s=timeout_s)


def gpu_power_reader(handle: ServerHandle) -> Callable[[], float | None] | None:
    """A reader of the server's GPUs' total power, or None when it has none to read."""
    source = plan_gpus(handle.plan).source
    if source is None:
        return None
    read = gpu_reader(source)

    def power() -> float | None:
        try:
            return read().power_w
        except DynoError:
            return None

    return power


def watch_handle(handle: ServerHandle, *, interval_s: float = SAMPLE_S) -> ServerWatch:
    """Watch a registry server at its profile's endpoint, and its plan's GPUs."""
    return ServerWatch(handle.plan.endpoint, gpu_power_reader(handle), interval_s=interval_s)


@dataclass(frozen=True)
class LiveFigures:
    """What ``status --live`` shows of one server."""

    generation_tps: float | None
    power_w: float | None
    gpus: str  # "GPU 0", "GPU 0+1", "no GPU"
    answering: bool | None  # None: not sampled (not ready)
    error: str | None = None


def live_figures(
    handles: Sequence[ServerHandle], *, window_s: float = LIVE_WINDOW_S, interval_s: float = 0.5
) -> dict[str, LiveFigures]:
    """Sample every ready server at once for ``window_s`` seconds; their figures by profile name."""
    ready = [h for h in handles if h.status.state is ServerState.READY]
    watches = {h.profile_name: (h, watch_handle(h, interval_s=interval_s)) for h in ready}
    try:
        time.sleep(window_s if watches else 0)
    finally:
        for _, watch in watches.values():
            watch.stop(timeout_s=5)
    out = {}
    for name, (handle, watch) in watches.items():
        tps, reachable, power = watch.figures()
        out[name] = LiveFigures(tps, power, plan_gpus(handle.plan).label, reachable, watch.error)
    return out


__all__ = ["LiveFigures", "ServerWatch", "gpu_power_reader", "live_figures", "watch_handle"]
