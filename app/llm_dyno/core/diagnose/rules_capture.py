"""The spec-decode verify batch outside the captured CUDA-graph sizes: the most actionable boot fact.

With speculative decoding each step verifies ``max_num_seqs × (K + 1)`` tokens at once. A batch larger
than the largest captured size runs eager, without CUDA graphs (vllm #27325; a truncated max capture
size cost 25.3 against 133.3 tok/s there, fixed by PR #30330). The change names the exact sizes.
"""

from __future__ import annotations

import json

from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import (
    ChangeKind,
    Finding,
    Impact,
    MetricEvidence,
    ProfileChange,
    Severity,
)
from llm_dyno.core.diagnose.fingerprint import CAPTURED, TRUNCATED, log_fingerprint
from llm_dyno.core.diagnose.registry import THIS_RULE, rule

VERIFY_RULE = "verify-batch-not-captured"


def _captured(inp: DiagnosisInput) -> tuple[list[int], str]:
    fp = log_fingerprint(inp.log)
    sizes = [int(s) for s in fp["_sizes"].value.split(",") if s] if "_sizes" in fp else []
    return sizes, fp[CAPTURED].where if CAPTURED in fp else (fp[TRUNCATED].where if TRUNCATED in fp else "")


@rule(VERIFY_RULE, "launch log, profile")
def verify_batch_not_captured(inp: DiagnosisInput) -> list[Finding]:
    """The verify batch (max_num_seqs × (K + 1) tokens) is above the largest captured CUDA-graph size."""
    if inp.profile is None or not inp.log.lines or inp.on_cpu():
        return []
    engine = inp.profile.engine()
    k = engine.num_speculative_tokens if engine.speculative_config else None
    seqs = engine.max_num_seqs
    if not k or not seqs:
        return []
    sizes, where = _captured(inp)
    batch = seqs * (k + 1)
    if not sizes or batch <= max(sizes):
        return []
    wanted = sorted({*sizes, batch})
    config = {**(engine.compilation_config or {}), "cudagraph_capture_sizes": wanted}
    value = json.dumps(config, separators=(",", ":"))
    return [
        Finding(
            THIS_RULE,
            f"The verify batch ({seqs} seq × ({k}+1) = {batch} tokens) runs eager: largest captured "
            f"CUDA-graph size {max(sizes)}",
            Severity.HIGH,
            Impact(
                basis="vllm #27325: a verify batch outside the captured sizes ran 25.3 against 133.3 tok/s"
            ),
            (
                MetricEvidence("verify batch", batch, "tokens", reference=max(sizes), source=where or "log"),
                MetricEvidence("captured sizes", ",".join(map(str, sizes)), source=where or "log"),
            ),
            f"Capture the verify batch: --compilation-config '{value}' (or max_cudagraph_capture_size ≥ "
            f"max_num_seqs × (K+1) = {batch}); apply it to a copy and benchmark both "
            "(llm-dyno bench NAME; llm-dyno history compare A B).",
            (ProfileChange(ChangeKind.SET_FLAG, "compilation-config", value),),
            "capture verify batch",
        )
    ]
