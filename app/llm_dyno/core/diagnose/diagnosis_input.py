"""Everything one diagnosis looks at, in one record: the profile, the reference, the launch log, the
metrics, GPU readings, a benchmark, typed figures and a pasted post (each optional; rules use what is
there). The single inputs are in :mod:`llm_dyno.core.diagnose.inputs`; a post is read by
:mod:`llm_dyno.core.diagnose.post`, which builds on those inputs, so this record sits above both."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.spec_log import log_acceptance
from llm_dyno.core.bench.stats import Comparison
from llm_dyno.core.diagnose.fingerprint import (
    IMAGE,
    KV,
    PATCHES,
    VERSION,
    Fact,
    Fingerprint,
    log_fingerprint,
    note_verify_batch,
)
from llm_dyno.core.diagnose.inputs import (
    Environment,
    LaunchLog,
    Measured,
    SyntheticSupport,
    measured_from_bench,
)
from llm_dyno.core.diagnose.post import Post
from llm_dyno.core.diagnose.references import Reference
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.nvml import GpuReading
from llm_dyno.core.telemetry.rates import MetricsRates


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


def user_fingerprint(inp: DiagnosisInput) -> Fingerprint:
    """Your facts: the launch log, then a pasted post's (each with its post line), then the environment
    (image digest, version) for what they lack."""
    post = inp.post
    fp = log_fingerprint(inp.log) if post is None or inp.log is not post.log else {}
    if post is not None:
        for fact, value in post.fingerprint().items():
            fp.setdefault(fact, value)
    if VERSION not in fp and inp.environment.vllm_version:
        fp[VERSION] = Fact(inp.environment.vllm_version, "environment")
    digest = inp.image_digest()
    if digest:
        fp[IMAGE] = Fact(digest, "environment" if inp.environment.image_digest else "profile image pin")
    if KV not in fp and inp.profile is not None and inp.profile.engine().kv_cache_dtype:
        fp[KV] = Fact(str(inp.profile.engine().kv_cache_dtype), "profile")
    if inp.profile is not None:
        e = inp.profile.engine()
        note_verify_batch(fp, e.max_num_seqs, e.num_speculative_tokens if e.speculative_config else None)
        scripts = _start_scripts(inp.profile)
        if PATCHES not in fp and scripts:
            fp[PATCHES] = Fact(
                f"runs {', '.join(scripts)} before vllm serve (how many applied: its log's first lines)",
                "profile entrypoint",
            )
    return fp


_SCRIPT = re.compile(r"[\w./-]*patch[\w.-]*\.py", re.IGNORECASE)


def _start_scripts(profile: Profile) -> list[str]:
    """The patch scripts a container profile's entrypoint runs before the server (e.g. Genesis')."""
    entry = profile.docker.entrypoint if profile.docker is not None else None
    found = _SCRIPT.findall(" ".join(entry or ()))
    return list(dict.fromkeys(name.rsplit("/", 1)[-1] for name in found))
