"""What a diagnosis looks at. Every piece is optional: rules use what is there and stay silent otherwise."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.spec_log import log_acceptance
from llm_dyno.core.bench.stats import Comparison
from llm_dyno.core.diagnose.evidence import LogEvidence
from llm_dyno.core.diagnose.references import Reference
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.nvml import GpuReading
from llm_dyno.core.telemetry.rates import MetricsRates

if TYPE_CHECKING:
    from llm_dyno.core.diagnose.post import Post


@dataclass(frozen=True)
class LaunchLog:
    """A server's log as numbered lines (1-based, as in the file, comment lines included)."""

    lines: tuple[str, ...] = ()
    first_line_no: int = 1
    source: str | None = None
    label: str = "log:"  # how evidence names a line: "log:12", or "post line 12" for a pasted post

    @staticmethod
    def from_text(text: str, source: str | None = None) -> LaunchLog:
        """Split a log file's text into lines; tqdm's carriage returns end a line too."""
        return LaunchLog(tuple(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")), 1, source)

    def numbered(self) -> Iterator[tuple[int, str]]:
        """(line number, line) pairs."""
        for i, line in enumerate(self.lines):
            yield self.first_line_no + i, line

    def evidence(self, line_no: int) -> LogEvidence:
        """The line of that number as evidence."""
        return LogEvidence(self.lines[line_no - self.first_line_no], line_no, self.label)


@dataclass(frozen=True)
class Environment:
    """Where the server ran: the image and vLLM it really used, the GPU and driver.

    ``gpu_mem_used_before_launch_bytes`` is memory other processes held before the server started.
    """

    image: str | None = None
    image_digest: str | None = None
    vllm_version: str | None = None
    gpu_name: str | None = None
    driver: str | None = None
    gpu_mem_used_before_launch_bytes: int | None = None
    gpu_mem_total_bytes: int | None = None


@dataclass(frozen=True)
class Measured:
    """The user's own numbers (wall tokens/s per prompt, per-position acceptance as fractions)."""

    narrative_tps: float | None = None
    code_tps: float | None = None
    acceptance_per_position: tuple[float, ...] = ()
    mean_acceptance_length: float | None = None
    source: str = "typed"
    acceptance_source: str = ""  # where the acceptance figures came from, when not from ``source``
    # per prompt kind: (prompt, mean acceptance length, where it came from), from a benchmark
    length_by_prompt: tuple[tuple[str, float, str], ...] = ()
    power_cap_w: float | None = None  # the cap the user's numbers were measured at (typed)
    power_cap_source: str = "typed"  # where the cap came from ("post line 1" for a pasted post)
    # narrative TPS of the same setup without speculative decoding (typed --no-spec-tps, or the
    # profile's stored A/B), for the split of time per pass into target forward and speculation overhead
    no_spec_tps: float | None = None
    no_spec_source: str = "typed"

    def length_of(self, prompt: str) -> tuple[float, str] | None:
        """The prompt kind's own mean acceptance length and its source, where measured apart."""
        return next(((length, src) for p, length, src in self.length_by_prompt if p == prompt), None)

    @property
    def acceptance_from(self) -> str:
        """Where the acceptance figures came from (``/metrics``, ``log: 3 SpecDecoding lines``, …)."""
        return self.acceptance_source or self.source


def parse_acceptance(text: str) -> tuple[float, ...]:
    """Per-position acceptance typed as ``93,86.6,73.9`` (percent) or ``0.93,0.866,0.739`` (fractions),
    as fractions; ValueError saying which value is wrong and what is expected."""
    parts = [p.strip().rstrip("%").strip() for p in text.replace(";", ",").replace("/", ",").split(",")]
    values: list[float] = []
    for part in parts:
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            example = "write rates per position, e.g. 93,86.6,73.9"
            raise ValueError(f"{part!r} is not a number ({example})") from None
        if not math.isfinite(value) or value < 0 or value > 100:
            raise ValueError(f"{part!r} is not an acceptance rate (0–100 %, or a fraction 0–1)")
        values.append(value)
    if not values:
        raise ValueError("no acceptance rates given (write one per position, e.g. 93,86.6,73.9)")
    # percent when any value is above 1: "93,86.6,73.9"; fractions otherwise: "0.93,0.866,0.739"
    scale = 100.0 if any(v > 1 for v in values) else 1.0
    return tuple(round(v / scale, 6) for v in values)


def measured_from_bench(result: BenchResult) -> Measured:
    """Mean wall TPS of the narrative and code prompts and acceptance over all measured runs."""

    def mean(name: str) -> float | None:
        p = result.prompt(name)
        s = p.summary("wall_tps") if p else None
        return s.mean if s else None

    total = None
    by_prompt: list[tuple[str, float, str]] = []
    for p in result.prompts:
        acc = p.acceptance
        if acc is not None:
            total = acc if total is None else total + acc
        # the server's own per-request figure first: it counts this prompt's requests alone
        req = p.request_acceptance
        if req is not None and req.steps:
            n = f"{req.requests} request{'s' if req.requests != 1 else ''}"
            by_prompt.append((p.name, req.mean_length, f"per-request (server), {n}"))
        elif acc is not None and acc.mean_length:
            by_prompt.append((p.name, acc.mean_length, "/metrics deltas of its runs"))
    return Measured(
        mean("narrative"),
        mean("code"),
        total.per_position if total else (),
        total.mean_length if total else None,
        "benchmark",
        length_by_prompt=tuple(by_prompt),
    )


@dataclass(frozen=True)
class SyntheticSupport:
    """Whether the profile's vLLM has synthetic rejection sampling (None: not checkable from here), and
    the synthetic keys its ``SpeculativeConfig`` has (``synthetic_acceptance_rates``, …), as it lists them."""

    supported: bool | None
    detail: str
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiagnosisInput:
    """Everything known about one server: profile, reference, environment, log, metrics, GPU, results.

    ``gpu_before`` are readings taken before launch (other processes' memory); ``gpu_under_load``
    readings taken while it generated (clocks, power, throttling). ``spec_ab`` holds the per-prompt
    verdicts of a spec-decoding on/off A/B (``ABResult.verdicts``).
    """

    profile: Profile | None = None
    reference: Reference | None = None
    environment: Environment = field(default_factory=Environment)
    log: LaunchLog = field(default_factory=LaunchLog)
    metrics: MetricsSnapshot | None = None
    rates: MetricsRates | None = None
    gpu_before: tuple[GpuReading, ...] = ()
    gpu_under_load: tuple[GpuReading, ...] = ()
    bench: BenchResult | None = None
    spec_ab: tuple[tuple[str, Comparison], ...] = ()
    measured: Measured | None = None
    published: tuple[Reference, ...] = ()  # the other rows the reference's source published
    reference_log: LaunchLog | None = None  # the reference's boot log, when someone has it
    synthetic: SyntheticSupport | None = None  # whether its vLLM can pin acceptance (checked by gather)
    post: Post | None = None  # a pasted forum post: its boot facts fill what the log does not say

    def measured_numbers(self) -> Measured | None:
        """Typed numbers if given, else the benchmark's; acceptance from them, else from /metrics, else
        from the log's SpecDecoding lines (``source`` says which)."""
        base = self.measured if self.measured is not None else None
        if base is None and self.bench is not None:
            base = measured_from_bench(self.bench)
        elif base is not None and self.bench is not None and base.narrative_tps is None and not base.code_tps:
            # typed acceptance or a cap alone: the TPS are the benchmark's
            bench = measured_from_bench(self.bench)
            base = replace(base, narrative_tps=bench.narrative_tps, code_tps=bench.code_tps)
        if base is not None and base.acceptance_per_position:
            return base
        acc = self._acceptance()
        if acc is None:
            return base
        per_position, length, source = acc
        if base is None:
            return Measured(None, None, per_position, length, source)
        return Measured(
            base.narrative_tps, base.code_tps, per_position, base.mean_acceptance_length or length,
            base.source, source, base.length_by_prompt, base.power_cap_w, base.power_cap_source,
            base.no_spec_tps, base.no_spec_source,
        )  # fmt: skip

    def _acceptance(self) -> tuple[tuple[float, ...], float | None, str] | None:
        r = self.rates
        if r is not None and r.per_position:
            return r.per_position, r.mean_acceptance_length, "/metrics"
        found = log_acceptance(self.log.lines)
        if found is not None and found.per_position:
            return found.per_position, found.mean_length, found.source
        return None

    def on_cpu(self) -> bool:
        """Whether the server is vLLM on the CPU (no CUDA: rules about CUDA graphs, GPU clocks or power
        mean nothing there): a vllm-cpu profile, a CPU build's version, or its log's CPU KV cache."""
        from llm_dyno.core.runtime.memory import is_cpu_profile

        if self.profile is not None and is_cpu_profile(self.profile):
            return True
        if "+cpu" in (self.environment.vllm_version or ""):
            return True
        return any("CPU KV cache" in line for line in self.log.lines)

    def speculative_tokens(self) -> int | None:
        """The profile's draft tokens per step (0: it does not speculate; None: no profile or unknown)."""
        if self.profile is None:
            return None
        engine = self.profile.engine()
        return (engine.num_speculative_tokens or None) if engine.speculative_config else 0

    def image(self) -> str | None:
        """The image that ran (environment), else the profile's."""
        if self.environment.image:
            return self.environment.image
        return self.profile.docker.image if self.profile and self.profile.docker else None

    def image_digest(self) -> str | None:
        """The digest that ran, else the one pinned in the image reference."""
        if self.environment.image_digest:
            return self.environment.image_digest
        image = self.image()
        return image.split("@", 1)[1] if image and "@" in image else None

    def power_cap(self) -> tuple[float, str] | None:
        """Your GPU's power cap and where it comes from: typed, the profile's, else a reading (NVML)."""
        if self.measured is not None and self.measured.power_cap_w is not None:
            return self.measured.power_cap_w, self.measured.power_cap_source
        if self.profile is not None and self.profile.power is not None and self.profile.power.limit_w:
            return self.profile.power.limit_w, "profile"
        for r in (*self.gpu_under_load, *self.gpu_before):
            if r.power_limit_w:
                return r.power_limit_w, "nvml"
        return None

    def gpu_name(self) -> str | None:
        """The GPU's name from the environment or any reading."""
        if self.environment.gpu_name:
            return self.environment.gpu_name
        for r in (*self.gpu_under_load, *self.gpu_before):
            if r.name:
                return r.name
        return None


def busy_readings(readings: Sequence[GpuReading], min_util_pct: float = 50.0) -> list[GpuReading]:
    """Readings taken while the GPU really worked (idle samples between requests say nothing)."""
    return [r for r in readings if r.util_gpu_pct is None or r.util_gpu_pct >= min_util_pct]
