"""The registry of diagnosis rules. Each rule is a small function: input in, zero or more findings out.

Rules read only the parts of :class:`DiagnosisInput` they need and return ``[]`` when those parts are
missing, so one registry serves a live server, a saved log, or a profile alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llm_dyno.core.diagnose import rules_gpu, rules_launch, rules_reference, rules_serving, synthetic
from llm_dyno.core.diagnose.evidence import Finding
from llm_dyno.core.diagnose.inputs import DiagnosisInput

RuleFn = Callable[[DiagnosisInput], list[Finding]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: the finding id it produces, what it looks at, and the function."""

    id: str
    looks_at: str
    check: RuleFn


RULES: tuple[Rule, ...] = (
    Rule(
        "claim-above-published", "reference, its source's other rows", rules_reference.claim_above_published
    ),
    Rule("spec-decode-differs-from-reference", "profile, reference", rules_reference.engine_flags_differ),
    Rule("cuda-graphs-downgraded", "launch log", rules_launch.cuda_graphs_downgraded),
    Rule("enforce-eager", "profile, launch log", rules_launch.enforce_eager),
    Rule("compile-cache-not-on-volume", "profile, launch log", rules_launch.compile_cache_not_on_volume),
    Rule(
        "image-differs-from-reference",
        "profile, environment, reference",
        rules_launch.image_differs_from_reference,
    ),
    Rule("image-not-pinned", "profile, environment", rules_launch.image_not_pinned),
    Rule("scheduled-tokens-capped", "launch log, profile", rules_launch.scheduled_tokens_warning),
    Rule("exposed-without-api-key", "profile", rules_launch.exposed_without_api_key),
    Rule("gpu-busy", "launch log, GPU before launch", rules_launch.gpu_busy),
    Rule("power-cap-below-reference", "profile, GPU, reference", rules_gpu.power_cap_below_reference),
    Rule("power-cap-binding", "GPU under load", rules_gpu.power_cap_binding),
    Rule("thermal-throttling", "GPU under load", rules_gpu.thermal_throttling),
    Rule("sm-clock-below-max", "GPU under load", rules_gpu.sm_clock_below_max),
    Rule("pcie-link-below-max", "GPU under load", rules_gpu.pcie_link_below_max),
    Rule(
        "acceptance-below-reference",
        "metrics or benchmark, reference",
        rules_serving.acceptance_below_reference,
    ),
    Rule("kv-cache-pressure", "metrics, engine log lines", rules_serving.kv_cache_pressure),
    Rule("thinking-tokens", "benchmark", rules_serving.thinking_tokens),
    Rule("spec-decode-not-net-gain", "spec-decode A/B", rules_serving.spec_decode_not_net_gain),
    Rule("synthetic-acceptance-ab", "profile, its vLLM, reference", synthetic.synthetic_acceptance_ab),
)
