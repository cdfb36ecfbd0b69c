"""Benchmark results: one record per run, grouped per prompt, with the context they ran in.

The JSON shape is a contract (other tools and the history store read it)::

    {"suite": …, "context": {…}, "prompts": [{"name": …, "runs": [{"warmup", "ttft_s", "wall_s",
     "completion_tokens", "wall_tps", "decode_tps", "finish_reason", "acceptance", "energy_j", …}],
     "summary": {"wall_tps": {…}, "decode_tps": {…}, "ttft_s": {…}, "tokens_per_j": {…}}}]}

``"context"`` is :class:`~llm_dyno.core.bench.run_context.RunContext`'s JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from llm_dyno.core.bench.latency import LatencySummary
from llm_dyno.core.bench.peer import PeerSummary, PeerTimings, arrived_in_burst
from llm_dyno.core.bench.reasoning import ReasoningTimes
from llm_dyno.core.bench.request_acceptance import RequestAcceptance, combine
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.run_readings import Acceptance, EnergyStats, ThermalState, sum_acceptance
from llm_dyno.core.bench.stats import Summary, summarize

SUMMARY_METRICS = ("wall_tps", "decode_tps", "ttft_s", "tokens_per_j")
# the runner's warning for a run that ended before max_tokens (kept in the JSON, so old results read too)
STOPPED_EARLY = "stopped early"
# the runners' warning for a run whose figures cannot be true (core/bench/plausible.py): left out of all
IMPOSSIBLE = "impossible figures"


@dataclass(frozen=True)
class BenchRun:
    """One timed request."""

    prompt: str
    index: int
    warmup: bool
    ttft_s: float | None
    wall_s: float
    completion_tokens: int
    wall_tps: float
    decode_tps: float | None
    finish_reason: str | None
    prompt_tokens: int | None = None
    latency: LatencySummary | None = None
    acceptance: Acceptance | None = None
    generation_tokens_delta: int | None = None
    energy: EnergyStats | None = None
    warnings: tuple[str, ...] = ()
    started_at: str | None = None
    peer: PeerTimings | None = None
    thermal: ThermalState | None = None
    read_bytes_delta: int | None = None  # vLLM's estimated bytes read during the run (MFU metrics)
    request_acceptance: RequestAcceptance | None = None  # the server's own per-request figure
    reasoning: ReasoningTimes | None = None  # with a reasoning parser: first content token, counts

    @property
    def stopped_early(self) -> bool:
        """Ended before its max_tokens: not comparable with full-length runs, so out of headlines."""
        return any(w.startswith(STOPPED_EARLY) for w in self.warnings)

    @property
    def impossible(self) -> str | None:
        """Why this run's figures cannot be true (a server that claimed more tokens than it could have
        sent), or None: such a run is kept, marked, and left out of every statistic."""
        return next((w for w in self.warnings if w.startswith(IMPOSSIBLE)), None)

    @property
    def left_out(self) -> bool:
        """Kept out of the headline figures: it stopped early, or its figures cannot be true."""
        return self.stopped_early or self.impossible is not None

    @property
    def burst(self) -> bool:
        """The stream arrived in a burst: its decode TPS measured transport (kept out of decode figures).

        Judged again from the stored timings, so results stored before the rule changed read right."""
        return arrived_in_burst(self.ttft_s, self.wall_s, self.completion_tokens, self.peer)

    def to_dict(self) -> dict[str, Any]:
        """JSON form of one run (the contract's keys first)."""
        e = self.energy
        return {
            "index": self.index,
            "warmup": self.warmup,
            "ttft_s": self.ttft_s,
            "wall_s": self.wall_s,
            "completion_tokens": self.completion_tokens,
            "wall_tps": self.wall_tps,
            "decode_tps": self.decode_tps,
            "finish_reason": self.finish_reason,
            "acceptance": self.acceptance.model_dump(mode="json") if self.acceptance else None,
            "energy_j": e.energy_j if e else None,
            "tokens_per_j": e.tokens_per_j if e else None,
            "mean_power_w": e.mean_power_w if e else None,
            "peak_power_w": e.peak_power_w if e else None,
            "sampled_mean_power_w": e.sampled_mean_power_w if e else None,
            "mean_power_source": e.mean_power_source if e else "",
            "peak_power_source": e.peak_power_source if e else "",
            "energy_span_s": e.span_s if e else None,
            "power_samples": e.samples if e else 0,
            "max_temperature_c": e.max_temperature_c if e else None,
            "throttle_reasons": list(e.throttle_reasons) if e else [],
            "prompt_tokens": self.prompt_tokens,
            "generation_tokens_delta": self.generation_tokens_delta,
            "inter_chunk": self.latency.model_dump(mode="json") if self.latency else None,
            "warnings": list(self.warnings),
            "started_at": self.started_at,
            "peer": self.peer.model_dump(mode="json") if self.peer else None,
            "thermal": self.thermal.model_dump(mode="json") if self.thermal else None,
            "estimated_read_bytes_delta": self.read_bytes_delta,
            "request_acceptance": self.request_acceptance.model_dump(mode="json")
            if self.request_acceptance
            else None,
            # only when the run had reasoning: results stored before it read back byte for byte
            **({"reasoning": self.reasoning.model_dump(mode="json")} if self.reasoning else {}),
        }

    @staticmethod
    def from_dict(prompt: str, d: dict[str, Any]) -> BenchRun:
        """Inverse of :meth:`to_dict`."""
        lat = d.get("inter_chunk")
        acc = d.get("acceptance")
        has_energy = any(d.get(k) is not None for k in ("energy_j", "mean_power_w", "max_temperature_c"))
        energy = (
            EnergyStats(
                energy_j=d.get("energy_j"),
                tokens_per_j=d.get("tokens_per_j"),
                mean_power_w=d.get("mean_power_w"),
                peak_power_w=d.get("peak_power_w"),
                max_temperature_c=d.get("max_temperature_c"),
                throttle_reasons=tuple(d.get("throttle_reasons") or ()),
                sampled_mean_power_w=d.get("sampled_mean_power_w"),
                mean_power_source=str(d.get("mean_power_source") or ""),
                peak_power_source=str(d.get("peak_power_source") or ""),
                span_s=d.get("energy_span_s"),
                samples=int(d.get("power_samples") or 0),
            )
            if has_energy
            else None
        )
        return BenchRun(
            prompt=prompt,
            index=int(d.get("index", 0)),
            warmup=bool(d["warmup"]),
            ttft_s=d.get("ttft_s"),
            wall_s=float(d["wall_s"]),
            completion_tokens=int(d["completion_tokens"]),
            wall_tps=float(d["wall_tps"]),
            decode_tps=d.get("decode_tps"),
            finish_reason=d.get("finish_reason"),
            prompt_tokens=d.get("prompt_tokens"),
            latency=LatencySummary.model_validate(lat) if lat else None,
            acceptance=Acceptance.model_validate(acc) if acc else None,
            generation_tokens_delta=d.get("generation_tokens_delta"),
            energy=energy,
            warnings=tuple(d.get("warnings") or ()),
            started_at=d.get("started_at"),
            peer=PeerTimings.model_validate(d["peer"]) if d.get("peer") else None,
            thermal=ThermalState.model_validate(d["thermal"]) if d.get("thermal") else None,
            read_bytes_delta=d.get("estimated_read_bytes_delta"),
            request_acceptance=RequestAcceptance.model_validate(ra)
            if (ra := d.get("request_acceptance"))
            else None,
            reasoning=ReasoningTimes.model_validate(d["reasoning"]) if d.get("reasoning") else None,
        )


@dataclass(frozen=True)
class PromptResult:
    """All runs of one prompt; summaries cover the counted runs: measured (not warm-up) and full-length.

    A measured run that stopped early, or whose figures cannot be true, is shown and counted in
    :attr:`excluded`, never averaged into a headline (nor, when impossible, into acceptance); a run
    whose stream arrived in a burst stays in every figure but decode TPS.
    """

    name: str
    runs: tuple[BenchRun, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "runs", tuple(self.runs))  # a list given is kept as it was then

    def with_run(self, run: BenchRun) -> PromptResult:
        """This prompt with one more run."""
        return PromptResult(self.name, (*self.runs, run))

    @property
    def measured(self) -> list[BenchRun]:
        """The measured runs (warm-ups excluded), flagged ones included."""
        return [r for r in self.runs if not r.warmup]

    @property
    def counted(self) -> list[BenchRun]:
        """The measured runs the headline figures use (those that stopped early or whose figures
        cannot be true left out)."""
        return [r for r in self.measured if not r.left_out]

    @property
    def excluded(self) -> list[BenchRun]:
        """Measured runs kept out of the headline figures (stopped early: not comparable; impossible
        figures: not true)."""
        return [r for r in self.measured if r.left_out]

    @property
    def impossible(self) -> list[BenchRun]:
        """Measured runs whose figures cannot be true (their reasons in :attr:`BenchRun.impossible`)."""
        return [r for r in self.measured if r.impossible is not None]

    @property
    def bursts(self) -> list[BenchRun]:
        """Counted runs whose decode TPS is left out (the stream arrived in a burst)."""
        return [r for r in self.counted if r.burst]

    def values(self, metric: str) -> list[float]:
        """Values of a metric over the counted runs (``wall_tps``, ``decode_tps``, ``ttft_s``, …);
        decode TPS also without the runs that arrived in a burst."""
        out: list[float] = []
        for r in self.counted:
            if metric == "decode_tps" and r.burst:
                continue
            v = r.energy.tokens_per_j if metric == "tokens_per_j" and r.energy else getattr(r, metric, None)
            if isinstance(v, int | float):
                out.append(float(v))
        return out

    def summary(self, metric: str) -> Summary | None:
        """Statistics of a metric over the measured runs."""
        return summarize(self.values(metric))

    @property
    def acceptance(self) -> Acceptance | None:
        """Acceptance over the measured runs, from summed counts (a short run's drafts count too)."""
        return sum_acceptance([r.acceptance for r in self.measured if r.impossible is None])

    @property
    def request_acceptance(self) -> RequestAcceptance | None:
        """The server's own per-request figures over the measured runs, summed (None where the server
        does not report them: vLLM without ``--per-request-spec-decode-metrics``)."""
        return combine(r.request_acceptance for r in self.measured if r.impossible is None)

    def engine_bytes_per_token(self) -> float | None:
        """vLLM's own estimate of the bytes read per generated token over the counted runs (None
        without ``--enable-mfu-metrics``, whose counter then stays at 0)."""
        runs = [r for r in self.counted if r.read_bytes_delta and r.generation_tokens_delta]
        tokens = sum(r.generation_tokens_delta or 0 for r in runs)
        return sum(r.read_bytes_delta or 0 for r in runs) / tokens if tokens else None

    def peer(self) -> PeerSummary | None:
        """``vllm bench serve``'s figures over the counted runs that have chunk timings."""
        return PeerSummary.of([(r.peer, r.completion_tokens) for r in self.counted if r.peer is not None])

    def exclusion_note(self) -> str | None:
        """``1 of 5 runs left out (stopped early) · decode TPS of 1 run left out (burst)``, or None
        (``… left out (impossible figures)`` for runs whose figures cannot be true)."""
        parts = []
        early = [r for r in self.excluded if r.impossible is None]
        if early:
            parts.append(f"{len(early)} of {len(self.measured)} runs left out (stopped early)")
        if self.impossible:
            n = len(self.impossible)
            parts.append(f"{n} of {len(self.measured)} runs left out (impossible figures)")
        if self.bursts:
            n = len(self.bursts)
            parts.append(f"decode TPS of {n} run{'s' if n > 1 else ''} left out (stream arrived in a burst)")
        return " · ".join(parts) or None

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with summaries."""
        summary: dict[str, Any] = {}
        for metric in SUMMARY_METRICS:
            s = self.summary(metric)
            summary[metric] = s.model_dump(mode="json") if s else None
        acc = self.acceptance
        summary["acceptance"] = acc.model_dump(mode="json") if acc else None
        per_request = self.request_acceptance
        summary["request_acceptance"] = per_request.model_dump(mode="json") if per_request else None
        peer = self.peer()
        summary["peer"] = peer.model_dump(mode="json") if peer else None
        summary["counted_runs"] = len(self.counted)
        summary["excluded_runs"] = [r.index for r in self.excluded]
        summary["burst_runs"] = [r.index for r in self.bursts]
        # only when there are any, so that records stored before this field read back byte for byte
        if self.impossible:
            summary["impossible_runs"] = [{"index": r.index, "reason": r.impossible} for r in self.impossible]
        return {"name": self.name, "runs": [r.to_dict() for r in self.runs], "summary": summary}


@dataclass(frozen=True)
class BenchResult:
    """A whole suite run: context, per-prompt runs, and how it ended (``error`` / ``cancelled``).

    Frozen: the runner and the jobs make a new one as runs finish (:meth:`with_run`,
    :meth:`with_context`, ``dataclasses.replace``), so a result handed to a store or a view never
    changes under it."""

    suite: str
    context: RunContext = field(default_factory=RunContext)
    prompts: tuple[PromptResult, ...] = ()
    error: str | None = None
    cancelled: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompts", tuple(self.prompts))

    def prompt(self, name: str) -> PromptResult | None:
        """The prompt of that name, if it ran."""
        return next((p for p in self.prompts if p.name == name), None)

    def with_run(self, prompt: str, run: BenchRun | None = None) -> BenchResult:
        """This result with ``run`` added to ``prompt`` (the prompt added after the others when it is
        new; with no run, only the prompt)."""
        current = self.prompt(prompt)
        if current is None:
            started = PromptResult(prompt, (run,) if run is not None else ())
            return replace(self, prompts=(*self.prompts, started))
        if run is None:
            return self
        return replace(self, prompts=tuple(p.with_run(run) if p.name == prompt else p for p in self.prompts))

    def with_context(self, **changes: Any) -> BenchResult:
        """This result with some context fields changed."""
        return replace(self, context=replace(self.context, **changes))

    def all_runs(self) -> list[BenchRun]:
        """Every run, warm-ups included, in order."""
        return [r for p in self.prompts for r in p.runs]

    @property
    def complete(self) -> bool:
        """Ran to the end without error or cancellation."""
        return self.error is None and not self.cancelled

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract."""
        return {
            "suite": self.suite,
            "context": self.context.to_dict(),
            "prompts": [p.to_dict() for p in self.prompts],
            "error": self.error,
            "cancelled": self.cancelled,
        }

    def to_json(self) -> str:
        """Indented JSON text."""
        return json.dumps(self.to_dict(), indent=2, default=str)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> BenchResult:
        """Read a result back (summaries are recomputed from the runs)."""
        prompts = tuple(
            PromptResult(p["name"], tuple(BenchRun.from_dict(p["name"], r) for r in p.get("runs", [])))
            for p in data.get("prompts", [])
        )
        return BenchResult(
            str(data.get("suite", "")),
            RunContext.from_dict(data.get("context")),
            prompts,
            data.get("error"),
            bool(data.get("cancelled", False)),
        )
