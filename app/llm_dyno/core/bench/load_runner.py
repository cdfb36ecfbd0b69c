"""Run load levels against a server: N parallel streams (closed loop) or seeded Poisson arrivals.

Each worker thread streams over its own keep-alive connection (a :class:`BenchClient` of its own), so
N streams are N connections, as ``vllm bench serve --max-concurrency N`` opens them. Between levels the
runner only scrapes /metrics, which generates nothing: the server's Δ ``generation_tokens_total`` over
a level equals the Σ of the usage tokens of its requests when nobody else uses the server.

Bounded: every request has the suite's deadline (``timeout_s``), every level its own; a cancel ends
the streams within a tenth of a second and keeps the levels already finished.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from llm_dyno.core.bench.client import BenchClient, StreamCancelled, StreamError
from llm_dyno.core.bench.counters import counter_delta, metrics_source
from llm_dyno.core.bench.gpu import GpuReader, RunSampler
from llm_dyno.core.bench.load import LevelResult, LoadLevel, LoadResult, RequestRecord, Slo
from llm_dyno.core.bench.peer import PeerTimings
from llm_dyno.core.bench.plausible import impossible_figures, max_tokens_of
from llm_dyno.core.bench.result import IMPOSSIBLE
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.telemetry.metrics import MetricsSnapshot

MAX_WORKERS = 64  # an open-loop level never has more streams in flight than this
DEFAULT_LEVEL_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class LevelStarted:
    """A level begins (``index`` of ``total``, from 1)."""

    level: LoadLevel
    index: int
    total: int
    requests: int


@dataclass(frozen=True)
class RequestDone:
    """A request of the running level finished (``done`` of ``total``)."""

    level: LoadLevel
    done: int
    total: int
    record: RequestRecord


@dataclass(frozen=True)
class LevelFinished:
    """A level finished and was kept."""

    result: LevelResult
    slo: Slo


@dataclass(frozen=True)
class LoadMessage:
    """Something to tell the user."""

    message: str


LoadEvent = LevelStarted | RequestDone | LevelFinished | LoadMessage


@dataclass(frozen=True)
class LoadPlan:
    """What to send: the levels, requests per level, the Poisson seed, deadlines and SLOs."""

    levels: tuple[LoadLevel, ...]
    requests_per_level: int | None = None  # None: the suite's prompts × runs, at least 2 × concurrency
    seed: int = 0
    slo: Slo = field(default_factory=Slo)
    level_timeout_s: float = DEFAULT_LEVEL_TIMEOUT_S

    def requests_for(self, level: LoadLevel, suite: Suite) -> int:
        """How many requests a level sends."""
        if self.requests_per_level is not None:
            return self.requests_per_level
        base = len(suite.prompts) * suite.runs
        return max(base, 2 * (level.concurrency or 1))


def arrival_times(rate: float, count: int, seed: int) -> list[float]:
    """Poisson arrivals (exponential gaps, ``vllm bench serve``'s burstiness 1), seconds from the start;
    the same seed gives the same schedule. The first request goes at once."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible schedule, not a secret
    times, t = [], 0.0
    for _ in range(count):
        times.append(t)
        t += rng.expovariate(rate)
    return times


def _request(
    prompt: str,
    sent_s: float,
    tokens: int,
    prompt_tokens: int | None,
    peer: PeerTimings | None,
    error: str | None = None,
) -> RequestRecord:
    return RequestRecord(
        prompt=prompt,
        sent_at_s=sent_s,
        output_tokens=tokens,
        prompt_tokens=prompt_tokens,
        peer=peer,
        error=error,
    )


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class LoadRunner:
    """Runs a :class:`LoadPlan` of ``suite`` against ``endpoint`` (its URL, model and key; a key that
    cannot be resolved is refused here, before any request); ``emit`` gets the events above."""

    def __init__(
        self,
        endpoint: Endpoint,
        suite: Suite,
        plan: LoadPlan,
        *,
        gpu: GpuReader | None = None,
        emit: Callable[[LoadEvent], None] | None = None,
        cancel: threading.Event | None = None,
        on_level: Callable[[LoadResult], None] | None = None,
    ) -> None:
        self.endpoint, self.suite, self.plan = endpoint, suite, plan
        self.url, self.model = endpoint.url, endpoint.model
        endpoint.check_key()  # refused here, before the first request
        self.gpu = gpu
        self.emit = emit or (lambda _e: None)
        self.cancel = cancel or threading.Event()
        self.on_level = on_level
        self._path = "/v1/chat/completions" if suite.endpoint == "chat" else "/v1/completions"

    def run(self, result: LoadResult) -> LoadResult:
        """Warm up, then every level in turn; never raises for server trouble (see ``result.error``).
        Returns ``result`` with the levels, times and outcome filled in (a new, frozen result)."""
        result = result.model_copy(update={"started": result.started or _now_iso()})
        with BenchClient(self.endpoint) as control:
            counters = metrics_source(control)
            try:
                self._warm_up(control)
                for i, level in enumerate(self.plan.levels, 1):
                    if self.cancel.is_set():
                        result = result.model_copy(update={"cancelled": True})
                        break
                    lr = self._level(level, i, counters)
                    if lr is None:  # cancelled midway: the finished levels stay
                        result = result.model_copy(update={"cancelled": True})
                        break
                    result = result.model_copy(update={"levels": (*result.levels, lr)})
                    self.emit(LevelFinished(lr, self.plan.slo))
                    if self.on_level is not None:
                        self.on_level(result)
                    if lr.error is not None:
                        result = result.model_copy(update={"error": f"{level.describe()}: {lr.error}"})
                        break
            except StreamCancelled:
                result = result.model_copy(update={"cancelled": True})
            except StreamError as exc:
                result = result.model_copy(update={"error": f"warm-up failed: {exc.message}"})
            finally:
                result = result.model_copy(update={"finished": _now_iso()})
        return result

    def _warm_up(self, client: BenchClient) -> None:
        for k in range(self.suite.warmups):
            prompt = self.suite.prompts[k % len(self.suite.prompts)]
            self.emit(LoadMessage(f"warm-up {k + 1}/{self.suite.warmups} ({prompt.name})"))
            body = self.suite.request_body(prompt, self.model)
            client.stream(self._path, body, self.cancel, deadline_s=self.suite.timeout_s)

    def _scrape(self, counters: Callable[[], MetricsSnapshot]) -> MetricsSnapshot | None:
        try:
            return counters()
        except Exception as exc:  # /metrics missing or broken: measure without it
            self.emit(LoadMessage(f"/metrics unavailable, acceptance not measured: {exc}"))
            return None

    def _level(
        self, level: LoadLevel, index: int, counters: Callable[[], MetricsSnapshot]
    ) -> LevelResult | None:
        count = self.plan.requests_for(level, self.suite)
        self.emit(LevelStarted(level, index, len(self.plan.levels), count))
        if level.rate is not None:
            schedule = arrival_times(level.rate, count, self.plan.seed)
            workers = min(count, MAX_WORKERS)
        else:
            schedule = [0.0] * count
            workers = min(count, level.concurrency or 1)
        before = self._scrape(counters)
        sampler = RunSampler(self.gpu) if self.gpu is not None else None
        if sampler is not None:
            sampler.start()
        level_cancel = threading.Event()
        records: list[RequestRecord | None] = [None] * count
        ends: list[float] = []
        lock = threading.Lock()
        next_index = [0]
        # the connections' clients are made before the clock starts: making one costs milliseconds
        clients = [BenchClient(self.endpoint) for _ in range(workers)]
        t0 = time.monotonic()

        def worker(client: BenchClient) -> None:
            with client:
                while not level_cancel.is_set():
                    with lock:
                        k = next_index[0]
                        if k >= count:
                            return
                        next_index[0] += 1
                    delay = t0 + schedule[k] - time.monotonic()
                    if delay > 0 and level_cancel.wait(delay):
                        return
                    record = self._one(client, k, t0, level_cancel)
                    if record is None:
                        return
                    with lock:
                        records[k] = record
                        ends.append(time.monotonic())
                        done = len(ends)
                    self.emit(RequestDone(level, done, count, record))

        threads = [
            threading.Thread(target=worker, args=(c,), name=f"load-{i}", daemon=True)
            for i, c in enumerate(clients)
        ]
        for t in threads:
            t.start()
        deadline = t0 + self.plan.level_timeout_s
        error = None
        while any(t.is_alive() for t in threads):
            if self.cancel.is_set() or time.monotonic() > deadline:
                if not self.cancel.is_set():
                    error = f"did not finish within {self.plan.level_timeout_s:g} s; gave up"
                level_cancel.set()
            for t in threads:
                t.join(timeout=0.1)
        tokens = sum(r.output_tokens for r in records if r is not None and r.peer is not None)
        energy = sampler.stop(tokens) if sampler is not None else None
        if self.cancel.is_set():
            return None
        duration = (max(ends) if ends else time.monotonic()) - t0
        after = self._settled(counters, before, tokens)
        delta = counter_delta(before, after) if before is not None and after is not None else None
        kept = tuple(r for r in records if r is not None)
        if kept and all(r.peer is None for r in kept):
            error = error or f"every request failed (first: {kept[0].error})"
        return LevelResult(
            level=level, requests=kept, duration_s=duration,
            generation_tokens_delta=None if delta is None else delta.generation_tokens,
            acceptance=None if delta is None else delta.acceptance,
            energy=energy, error=error,
        )  # fmt: skip

    def _one(self, client: BenchClient, k: int, t0: float, cancel: threading.Event) -> RequestRecord | None:
        prompt = self.suite.prompts[k % len(self.suite.prompts)]
        body = self.suite.request_body(prompt, self.model)
        sent = time.monotonic() - t0
        try:
            o = client.stream(self._path, body, cancel, deadline_s=self.suite.timeout_s)
        except StreamCancelled:
            return None
        except StreamError as exc:
            return _request(prompt.name, sent, 0, None, None, exc.message)
        impossible = impossible_figures(o, max_tokens_of(body))
        if impossible is not None:  # a failed request: no count, no timing of the level comes from it
            return _request(prompt.name, sent, 0, o.prompt_tokens, None, f"{IMPOSSIBLE}: {impossible}")
        peer = PeerTimings.of(o.event_times_s, o.completion_tokens)
        if peer is None:
            return _request(prompt.name, sent, o.completion_tokens, o.prompt_tokens, None, "no tokens")
        return _request(prompt.name, sent, o.completion_tokens, o.prompt_tokens, peer)

    def _settled(
        self, counters: Callable[[], MetricsSnapshot], before: MetricsSnapshot | None, tokens: int
    ) -> MetricsSnapshot | None:
        """Scrape after a level; re-scrape for up to a second while the counters lag the streams."""
        if before is None:
            return None
        end = time.monotonic() + 1.0
        while True:
            after = self._scrape(counters)
            if after is None or (after.generation_tokens or 0) - (before.generation_tokens or 0) >= tokens:
                return after
            if time.monotonic() >= end or self.cancel.wait(0.05):
                return after


def levels_of(concurrency: Sequence[int] = (), rates: Sequence[float] = ()) -> tuple[LoadLevel, ...]:
    """Concurrency levels first, then rates, in the order given."""
    return (*(LoadLevel(concurrency=n) for n in concurrency), *(LoadLevel(rate=r) for r in rates))
