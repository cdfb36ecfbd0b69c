"""A periodic sampling thread shared by the metrics and GPU samplers.

The thread calls ``tick()`` every ``interval_s`` seconds and hands what it returns to ``sink``. A tick
or sink that raises is logged and the loop goes on: a flaky server or a buggy consumer must not stop
telemetry silently. ``stop()`` wakes the thread at once and joins it, so no thread is left behind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)


class PeriodicSampler(Generic[T]):
    """Run ``tick`` every ``interval_s`` seconds on a daemon thread and pass each result to ``sink``.

    Ticks are scheduled on a fixed grid (``start + n * interval``) so a slow tick does not make the
    rate drift; when a tick overruns a whole interval the missed slots are skipped, not bunched up.
    ``cpu_s`` is the CPU time the thread itself has used (``time.thread_time``), for cost checks.
    """

    def __init__(
        self,
        tick: Callable[[], T],
        sink: Callable[[T], None],
        *,
        interval_s: float,
        name: str,
        max_samples: int | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval must be positive, got {interval_s}")
        self._tick = tick
        self._sink = sink
        self.interval_s = interval_s
        self._max_samples = max_samples
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._cpu_s = 0.0
        self.samples = 0

    @property
    def cpu_s(self) -> float:
        """CPU seconds used by the sampling thread so far (updated after every tick)."""
        return self._cpu_s

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread.is_alive()

    def read_now(self) -> T:
        """One reading, taken in the calling thread (no thread needs to run)."""
        return self._tick()

    def start(self) -> None:
        """Start sampling (the first tick runs at once)."""
        self._thread.start()

    def stop(self, timeout_s: float | None = 10.0) -> None:
        """Ask the thread to stop and wait for it; a tick in progress finishes first."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    def join(self, timeout_s: float | None = None) -> None:
        """Wait until the thread ends (after ``stop`` or ``max_samples`` ticks)."""
        self._thread.join(timeout_s)

    def __enter__(self) -> PeriodicSampler[T]:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                record = self._tick()
            except Exception:  # a tick must report failures itself; this is the last net
                log.exception("sampler %s: tick failed", self._thread.name)
            else:
                try:
                    self._sink(record)
                except Exception:
                    log.exception("sampler %s: sink failed", self._thread.name)
            self.samples += 1
            self._cpu_s = time.thread_time()
            if self._max_samples is not None and self.samples >= self._max_samples:
                return
            next_at += self.interval_s
            now = time.monotonic()
            if next_at < now:  # overran: skip the missed slots
                next_at = now + self.interval_s - ((now - next_at) % self.interval_s)
            self._stop.wait(next_at - now)
