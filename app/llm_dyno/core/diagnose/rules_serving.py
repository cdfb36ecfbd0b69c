"""Rules over what the server did: acceptance, KV cache, benchmark warnings, the spec-decode A/B."""

from __future__ import annotations

from llm_dyno.core.bench.stats import Verdict
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import (
    ChangeKind,
    Evidence,
    Finding,
    Impact,
    MetricEvidence,
    ProfileChange,
    Severity,
)
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.runtime.logformats import parse_engine_stats

# A position this much (absolute) below the reference's counts as lower, not noise.
_ACCEPTANCE_MARGIN = 0.05
_KV_FULL = 0.90


def _severity_for(pct: float) -> Severity:
    return Severity.HIGH if pct >= 15 else Severity.MEDIUM if pct >= 5 else Severity.LOW


@rule("acceptance-below-reference", "metrics or benchmark, reference")
def acceptance_below_reference(inp: DiagnosisInput) -> list[Finding]:
    """Per-position acceptance lower than the reference's.

    Per-position rates are cumulative (position i is accepted only if all before it were), so tokens
    per verify step = 1 + Σ rates; the TPS cost is estimated from the ratio of those sums.
    """
    ref, m = inp.reference, inp.measured_numbers()
    if ref is None or m is None or not ref.numbers.acceptance_per_position or not m.acceptance_per_position:
        return []
    n = min(len(ref.numbers.acceptance_per_position), len(m.acceptance_per_position))
    mine, theirs = m.acceptance_per_position[:n], ref.numbers.acceptance_per_position[:n]
    low = [i for i in range(n) if mine[i] < theirs[i] - _ACCEPTANCE_MARGIN]
    if not low:
        return []
    cost = (1 - (1 + sum(mine)) / (1 + sum(theirs))) * 100
    evidence = tuple(
        MetricEvidence(
            f"acceptance at position {i + 1}",
            round(mine[i], 3),
            reference=theirs[i],
            source=m.acceptance_from,
        )
        for i in range(n)
    )
    return [
        Finding(
            THIS_RULE,
            "Speculative acceptance below the reference's",
            _severity_for(cost),
            Impact(
                tps_pct=round(max(cost, 0.0), 1), basis="tokens per verify step = 1 + Σ per-position rates"
            ),
            evidence,
            "Compare the prompts, temperature and thinking mode with the reference's; check the draft/MTP "
            "weights are the intended ones (not re-quantized); fewer speculative tokens can win when the "
            "later positions are rarely accepted.",
            fix_label="acceptance",
        )
    ]


@rule("kv-cache-pressure", "metrics, engine log lines")
def kv_cache_pressure(inp: DiagnosisInput) -> list[Finding]:
    """The KV cache is nearly full, or requests were preempted (recomputed) for lack of room."""
    evidence: list[Evidence] = []
    s, r = inp.metrics, inp.rates
    if s is not None and s.kv_cache_usage is not None and s.kv_cache_usage >= _KV_FULL:
        evidence.append(MetricEvidence("KV cache usage", f"{s.kv_cache_usage:.0%}", source="/metrics"))
    if s is not None and s.preemptions:
        evidence.append(MetricEvidence("preemptions", s.preemptions, source="/metrics"))
    if r is not None and r.preemptions_per_s:
        evidence.append(
            MetricEvidence("preemptions per second", round(r.preemptions_per_s, 3), source="/metrics")
        )
    for no, line in inp.log.numbered():
        st = parse_engine_stats(line)
        if st is not None and (
            (st.kv_cache_usage_pct is not None and st.kv_cache_usage_pct >= _KV_FULL * 100) or st.preemptions
        ):
            evidence.append(inp.log.evidence(no))
            break
    if not evidence:
        return []
    return [
        Finding(
            THIS_RULE,
            "KV cache near full or requests preempted",
            Severity.MEDIUM,
            Impact(basis="preempted requests are recomputed; fewer requests run at once"),
            tuple(evidence),
            "Give the KV cache more room: a lower --max-model-len or --max-num-seqs, a higher "
            "--gpu-memory-utilization, or an fp8 --kv-cache-dtype.",
            fix_label="kv cache",
        )
    ]


@rule("thinking-tokens", "benchmark")
def thinking_tokens(inp: DiagnosisInput) -> list[Finding]:
    """Benchmark runs spent tokens on reasoning text: not comparable with the community's numbers."""
    if inp.bench is None:
        return []
    runs = [r for r in inp.bench.all_runs() if any("thinking" in w for w in r.warnings)]
    if not runs:
        return []
    warning = next(w for w in runs[0].warnings if "thinking" in w)
    return [
        Finding(
            THIS_RULE,
            f"The model thought in {len(runs)} benchmark run(s)",
            Severity.MEDIUM,
            Impact(basis="reasoning tokens change the text generated, so speed and acceptance differ"),
            (
                MetricEvidence("runs with reasoning text", len(runs), source="benchmark"),
                MetricEvidence(f"{runs[0].prompt} run {runs[0].index}", warning, source="benchmark"),
            ),
            "Benchmark with chat_template_kwargs.enable_thinking=false, as the community protocol does.",
            fix_label="thinking",
        )
    ]


@rule("spec-decode-not-net-gain", "spec-decode A/B")
def spec_decode_not_net_gain(inp: DiagnosisInput) -> list[Finding]:
    """The A/B says speculative decoding is slower than, or no faster than, plain decoding."""
    bad = [(p, c) for p, c in inp.spec_ab if c.verdict in (Verdict.WORSE, Verdict.WITHIN_NOISE)]
    if not inp.spec_ab or len(bad) < len(inp.spec_ab):
        return []
    worse = any(c.verdict is Verdict.WORSE for _, c in bad)
    deltas = [-c.delta_pct for _, c in bad if c.delta_pct is not None and c.delta_pct < 0]
    evidence = tuple(
        MetricEvidence(
            f"{p} wall TPS with spec decode",
            round(c.candidate_mean, 2) if c.candidate_mean is not None else None,
            reference=round(c.baseline_mean, 2) if c.baseline_mean is not None else None,
            source=f"A/B: {c.verdict.value}",
        )
        for p, c in bad
    )
    changes = (
        (ProfileChange(ChangeKind.REMOVE_FLAG, "speculative-config"),)
        if worse and inp.profile is not None and inp.profile.engine().speculative_config
        else ()
    )
    return [
        Finding(
            THIS_RULE,
            "Speculative decoding is not a net gain here" + (" (slower)" if worse else ""),
            Severity.HIGH if worse else Severity.MEDIUM,
            Impact(
                tps_pct=round(max(deltas), 1) if deltas else None, basis="measured by the spec-decode A/B"
            ),
            evidence,
            "Turn speculative decoding off, or try fewer speculative tokens or another drafter; check the "
            "acceptance per position first.",
            changes,
            "no spec decode",
        )
    ]
