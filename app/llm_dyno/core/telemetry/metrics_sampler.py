"""Live scrapes for ``watch`` and the dashboard: :class:`MetricsSampler` scrapes ``/metrics`` on a
thread and hands :class:`MetricsSample` records, each a snapshot with the rates over a window of
snapshots (:class:`~llm_dyno.core.telemetry.rates.RateWindow`), to a sink.

Above both the snapshot (:mod:`~llm_dyno.core.telemetry.metrics`) and the rates
(:mod:`~llm_dyno.core.telemetry.rates`, which read snapshots).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.telemetry.metrics import MetricsError, MetricsReader, MetricsSnapshot
from llm_dyno.core.telemetry.rates import MetricsRates, RateWindow
from llm_dyno.core.telemetry.sampler import PeriodicSampler


@dataclass(frozen=True)
class MetricsSample:
    """One tick of a :class:`MetricsSampler`: a snapshot and the rates over the window ending at it.

    ``error`` is set (and ``snapshot`` None) when the server did not answer: ``reachable`` is False.
    ``rates`` is None while the window is shorter than its minimum (the first seconds) and for any
    scrape that failed.
    """

    taken_at: float
    url: str
    snapshot: MetricsSnapshot | None
    rates: MetricsRates | None
    error: str | None = None

    @property
    def reachable(self) -> bool:
        """Whether this scrape got an answer."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (one ``watch --json`` line)."""
        return {
            "taken_at": self.taken_at,
            "url": self.url,
            "reachable": self.reachable,
            "error": self.error,
            "snapshot": None if self.snapshot is None else self.snapshot.to_dict(),
            "rates": None if self.rates is None else asdict(self.rates),
        }


class MetricsSampler(PeriodicSampler[MetricsSample]):
    """Scrape ``/metrics`` of ``endpoint`` every ``interval_s`` seconds on a thread; each result goes
    to ``sink``. The endpoint's key is sent when it resolves; when it does not, the samples say what the
    server answers (401), as a watcher should (a front end that must refuse first calls
    :meth:`~llm_dyno.core.endpoint.Endpoint.check_key`).

    A server that stops answering yields "unreachable" samples and is tried again on every tick;
    when it comes back (maybe restarted) the first interval is flagged ``reset`` if counters fell.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        sink: Callable[[MetricsSample], None],
        *,
        interval_s: float = 1.0,
        timeout_s: float | None = None,
        max_samples: int | None = None,
    ) -> None:
        # A scrape must not outlive its slot by much, or a hung server stalls the sampler.
        timeout = timeout_s if timeout_s is not None else max(1.0, 2 * interval_s)
        self._reader = MetricsReader(endpoint.url, api_key=endpoint.api_key_or_none(), timeout_s=timeout)
        self.url = self._reader.url
        self.window = RateWindow.for_interval(interval_s)
        super().__init__(
            self._scrape_once, sink, interval_s=interval_s, name="metrics-sampler", max_samples=max_samples
        )

    def _scrape_once(self) -> MetricsSample:
        try:
            snap = self._reader.read()
        except MetricsError as exc:
            return MetricsSample(time.monotonic(), self.url, None, None, error=exc.message)
        return MetricsSample(snap.taken_at, self.url, snap, self.window.add(snap))

    def _run(self) -> None:
        try:
            super()._run()
        finally:
            self._reader.close()
