"""Run a suite against a server, run by run, with per-run /metrics and GPU deltas.

Every token generated while a suite runs belongs to a run: between runs the runner only scrapes
/metrics and GETs /version, which generate nothing, so the sum of completion tokens over the runs
equals the Δ of ``vllm:generation_tokens_total`` over the suite (the live test checks it exactly).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from llm_dyno.core.bench.client import BenchClient, StreamCancelled, StreamError, StreamOutcome
from llm_dyno.core.bench.counters import CounterSource, counter_delta
from llm_dyno.core.bench.gpu import GpuReader, RunSampler, settle_temperature
from llm_dyno.core.bench.peer import PeerTimings, burst_reason
from llm_dyno.core.bench.plausible import impossible_figures, max_tokens_of
from llm_dyno.core.bench.reasoning import ReasoningTimes
from llm_dyno.core.bench.result import IMPOSSIBLE, BenchResult, BenchRun
from llm_dyno.core.bench.run_readings import ThermalState
from llm_dyno.core.bench.suite import STANDARD, Suite, SuitePrompt
from llm_dyno.core.bench.workloads.protocol import Measured
from llm_dyno.core.telemetry.metrics import MetricsSnapshot


class EventKind(StrEnum):
    """What a progress event reports."""

    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"
    MESSAGE = "message"


@dataclass(frozen=True)
class ProgressEvent:
    """A progress report: a run starting or finishing (with its record), or a message."""

    kind: EventKind
    prompt: str = ""
    index: int = 0
    total: int = 0
    warmup: bool = False
    run: BenchRun | None = None
    message: str = ""


Progress = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class ThermalWait:
    """Wait for a stable GPU temperature before each prompt's first run (the default when a GPU is
    read: measured runs start from a stated thermal state, recorded in each run)."""

    tolerance_c: float = 1.0
    window_s: float = 10.0
    timeout_s: float = 120.0
    interval_s: float = 1.0


DEFAULT_THERMAL_WAIT = ThermalWait()
NO_GPU_THERMAL = ThermalState(stable=None, note="no GPU visible: thermal state unknown")


def _now_iso(timespec: str = "seconds") -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec=timespec)


class BenchRunner:
    """Runs a :class:`Suite` through a :class:`BenchClient`.

    ``counters`` reads the server's counters (``None``: no /metrics); ``gpu`` reads the GPU (``None``:
    no NVML); ``cancel`` may be set from any thread and is honoured between chunks and runs.
    """

    def __init__(
        self,
        client: BenchClient,
        suite: Suite,
        model: str,
        *,
        counters: CounterSource | None = None,
        gpu: GpuReader | None = None,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
        thermal_wait: ThermalWait | None = DEFAULT_THERMAL_WAIT,
        settle_s: float = 1.0,
    ) -> None:
        self.client = client
        self.suite = suite
        self.model = model
        self.counters = counters
        self.gpu = gpu
        self.progress = progress
        self.cancel = cancel or threading.Event()
        self.thermal_wait = thermal_wait
        self._thermal = NO_GPU_THERMAL  # the state the current prompt's runs start from
        # how long to re-scrape when the counters lag the stream's end
        self.settle_s = settle_s
        self.result = BenchResult(suite.name)  # the result so far (see run)

    def _emit(self, event: ProgressEvent) -> None:
        if self.progress is not None:
            self.progress(event)

    def _scrape(self) -> MetricsSnapshot | None:
        if self.counters is None:
            return None
        try:
            return self.counters()
        except Exception as exc:  # /metrics missing or broken: measure without it
            self._emit(
                ProgressEvent(
                    EventKind.MESSAGE, message=f"/metrics unavailable, acceptance not measured: {exc}"
                )
            )
            self.counters = None
            return None

    def run(self, result: BenchResult | None = None) -> BenchResult:
        """Run the whole suite; never raises for server trouble (see ``result.error``, also set when
        a run's figures could not be true: the runs are kept, marked and left out of the figures).

        ``result`` is the result to fill in (its context collected beforehand); :attr:`result` is the
        result so far while the suite runs (the frozen results are replaced run by run)."""
        result = result or BenchResult(self.suite.name)
        self.result = result.with_context(started=result.context.started or _now_iso())
        try:
            if self.suite.kind != STANDARD:
                from llm_dyno.core.bench.workloads.run import run_workload

                run_workload(self)
            for prompt in self.suite.prompts if self.suite.kind == STANDARD else ():
                self.result = self.result.with_run(prompt.name)
                if not self._run_prompt(prompt):
                    break
            if self.result.complete and (why := _impossible_error(self.result)) is not None:
                self._end(error=why)
        finally:
            self.result = self.result.with_context(finished=_now_iso())
        return self.result

    def _end(self, **changes: object) -> None:  # error=… or cancelled=True
        self.result = dataclasses.replace(self.result, **changes)  # type: ignore[arg-type]

    def _run_prompt(self, prompt: SuitePrompt) -> bool:
        total = self.suite.warmups + self.suite.runs
        self._thermal = self._settle(prompt.name)
        for i in range(1, total + 1):
            if self.step(prompt, i, total, i <= self.suite.warmups) is None:
                return False
        return True

    def step(self, prompt: SuitePrompt, i: int, total: int, warmup: bool) -> Measured | None:
        """Run ``prompt`` once as run ``i`` of ``total`` and add it to the result; None when the suite
        ends here (cancelled, or server trouble: :attr:`result` says which). Workloads run through it."""
        if self.cancel.is_set():
            self._end(cancelled=True)
            return None
        self._emit(ProgressEvent(EventKind.RUN_STARTED, prompt.name, i, total, warmup))
        try:
            measured = self._measure(prompt, i, warmup)
        except StreamCancelled:
            self._end(cancelled=True)
            return None
        except StreamError as exc:
            result = self.result
            if exc.kind == "connection":
                last = next(((p.name, p.runs[-1].index) for p in reversed(result.prompts) if p.runs), None)
                where = f"after run {last[1]} of {last[0]}" if last else "before any run completed"
                self._end(error=f"server stopped answering {where}: {exc.message}")
            else:
                self._end(error=f"run {i} of {prompt.name} failed: {exc.message}")
            kept = len(result.all_runs())
            self._emit(
                ProgressEvent(
                    EventKind.MESSAGE,
                    prompt.name,
                    i,
                    total,
                    warmup,
                    message=f"{self.result.error} ({kept} completed runs kept)",
                )
            )
            return None
        self.result = self.result.with_run(prompt.name, measured.run)
        self._emit(ProgressEvent(EventKind.RUN_FINISHED, prompt.name, i, total, warmup, measured.run))
        return measured

    def _settle(self, prompt: str) -> ThermalState:
        """Wait for a stable temperature (when a GPU is read and the wait is on); the state reached."""
        if self.gpu is None:
            return NO_GPU_THERMAL
        if self.thermal_wait is None:
            return ThermalState(stable=None, note="no wait for a stable temperature (turned off)")
        tw = self.thermal_wait
        self._emit(ProgressEvent(EventKind.MESSAGE, prompt, message="waiting for a stable GPU temperature"))
        state = settle_temperature(
            self.gpu, tolerance_c=tw.tolerance_c, window_s=tw.window_s, timeout_s=tw.timeout_s,
            interval_s=tw.interval_s, cancel=self.cancel,
        )  # fmt: skip
        self._emit(ProgressEvent(EventKind.MESSAGE, prompt, message=f"GPU temperature {state.describe()}"))
        return state

    def _measure(self, prompt: SuitePrompt, index: int, warmup: bool) -> Measured:
        path = "/v1/chat/completions" if self.suite.endpoint == "chat" else "/v1/completions"
        body = self.suite.request_body(prompt, self.model)
        before = self._scrape()
        sampler = RunSampler(self.gpu) if self.gpu is not None else None
        started = _now_iso("milliseconds")  # a run's energy window can be checked against other readers
        if sampler is not None:
            sampler.start()
        try:
            outcome = self.client.stream(path, body, self.cancel, deadline_s=self.suite.timeout_s)
        except BaseException:
            if sampler is not None:
                sampler.stop(0)  # never leave the sampling thread behind
            raise
        impossible = impossible_figures(outcome, max_tokens_of(body))
        # a claim that cannot be true is no figure: the run keeps its timings and the reason, and no
        # count or rate derived from the claim (0 tokens, no decode TPS, no acceptance)
        tokens = 0 if impossible is not None else outcome.completion_tokens
        energy = sampler.stop(tokens) if sampler is not None else None
        after = self._settled_scrape(before, tokens)
        acceptance = gen_delta = read_bytes = None
        unknown = None
        if before is not None and after is not None:
            delta = counter_delta(before, after)
            gen_delta = delta.generation_tokens
            acceptance = delta.acceptance
            read_bytes = delta.read_bytes
            unknown = delta.unknown
        if impossible is not None:
            warnings = [f"{IMPOSSIBLE}: {impossible}; the run is left out of every figure"]
            acceptance = None
        else:
            warnings = _warnings(outcome, prompt, gen_delta)
        if unknown is not None:
            warnings.append(f"{unknown}: this run's generation and acceptance counts are not known")
        run = BenchRun(
            prompt=prompt.name,
            index=index,
            warmup=warmup,
            ttft_s=outcome.ttft_s,
            wall_s=outcome.wall_s,
            completion_tokens=tokens,
            wall_tps=tokens / outcome.wall_s if outcome.wall_s > 0 else 0.0,
            decode_tps=_decode_tps(outcome) if impossible is None else None,
            finish_reason=outcome.finish_reason,
            prompt_tokens=outcome.prompt_tokens,
            latency=outcome.latency,
            acceptance=acceptance,
            generation_tokens_delta=gen_delta,
            energy=energy,
            warnings=tuple(warnings),
            started_at=started,
            peer=PeerTimings.of(outcome.event_times_s, tokens) if impossible is None else None,
            request_acceptance=outcome.request_acceptance if impossible is None else None,
            reasoning=ReasoningTimes.of(outcome) if impossible is None else None,
            read_bytes_delta=read_bytes,
            thermal=self._thermal.model_copy(
                update={"start_c": sampler.start_temperature_c if sampler is not None else None}
            ),
        )
        return Measured(run, outcome, before, after)

    def _settled_scrape(self, before: MetricsSnapshot | None, tokens: int) -> MetricsSnapshot | None:
        """Scrape after a run; re-scrape briefly while the counters still lag the tokens streamed."""
        if before is None:
            return None
        deadline = time.monotonic() + self.settle_s
        while True:
            after = self._scrape()
            if after is None or (after.generation_tokens or 0) - (before.generation_tokens or 0) >= tokens:
                return after
            if time.monotonic() >= deadline or self.cancel.wait(0.05):
                return after


def _impossible_error(result: BenchResult) -> str | None:
    """The error of a suite some of whose measured runs had impossible figures, or None."""
    bad = [(p.name, r) for p in result.prompts for r in p.impossible]
    if not bad:
        return None
    measured = sum(len(p.measured) for p in result.prompts)
    name, first = bad[0]
    reason = (first.impossible or "").removeprefix(f"{IMPOSSIBLE}: ")
    return (
        f"{len(bad)} of {measured} measured runs had impossible figures, left out of every figure "
        f"(first: run {first.index} of {name}: {reason})"
    )


def _burst(o: StreamOutcome) -> str | None:
    # the rule lives with the timings (core/bench/peer.py), so stored results are judged alike
    return burst_reason(
        o.ttft_s, o.wall_s, o.completion_tokens, PeerTimings.of(o.event_times_s, o.completion_tokens)
    )


def _decode_tps(o: StreamOutcome) -> float | None:
    """The protocol's tokens / (wall - TTFT); None when it would not measure decoding (a burst)."""
    if o.ttft_s is None or _burst(o) is not None:
        return None
    decode = o.wall_s - o.ttft_s
    return o.completion_tokens / decode if decode > 0 else None


def _warnings(o: StreamOutcome, prompt: SuitePrompt, gen_delta: int | None) -> list[str]:
    out: list[str] = []
    if o.finish_reason == "stop" and o.completion_tokens < prompt.max_tokens:
        out.append(
            f"stopped early: {o.completion_tokens} of {prompt.max_tokens} tokens (finish_reason stop); "
            "short runs are not comparable with full-length ones"
        )
    if o.reasoning_chars:
        out.append(
            f"spent tokens thinking ({o.reasoning_chars} characters of reasoning text); "
            "set chat_template_kwargs.enable_thinking=false to compare with the community"
        )
    if o.ttft_s is None:
        out.append("no visible text in the stream (only special tokens?): TTFT and decode TPS unknown")
    # a stream that arrived in a burst is no warning of its own (vLLM on the CPU sends them often): the run
    # keeps the flag (BenchRun.burst), and the result says it once, in words (report.burst_note)
    if gen_delta is not None and gen_delta != o.completion_tokens:
        out.append(
            f"the server generated {gen_delta} tokens during this run but streamed {o.completion_tokens}: "
            "another client was using it, so acceptance figures are mixed"
        )
    return out
