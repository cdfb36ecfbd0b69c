"""Split time per pass into the target model's forward and the speculation overhead, with a no-spec run.

Without speculative decoding a pass yields one token, so 1000 / no-spec TPS is the milliseconds one
forward of the target model takes. With it a pass is one target forward (verifying K + 1 tokens costs
about one forward: decode reads the weights once, memory-bound) plus the drafter's work and the
rejection sampling: time per pass − target forward is the speculation overhead. Done for both sides,
with the reference's own no-spec row (the recipe publishes "minimal: no spec decode", 32.4 narrative
TPS), it says whether your passes are slower because the target runs slower (engine, GPU, power) or
because speculating costs more (the drafter's path: on sm_8x with FlashInfer the drafter runs eager,
vllm #54992).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.references import Reference

# a part of the pass within this share of the reference's is "the same"
SAME_WITHIN = 0.05


@dataclass(frozen=True)
class NoSpecSplit:
    """Milliseconds per pass split into target forward and speculation overhead, yours and the reference's
    (narrative prompt; the no-spec TPS and where each came from)."""

    yours_no_spec_tps: float
    reference_no_spec_tps: float
    yours_ms_per_pass: float
    reference_ms_per_pass: float
    yours_source: str
    reference_source: str

    @property
    def yours_ms_forward(self) -> float:
        """Your target forward: 1000 / your no-spec TPS."""
        return 1000.0 / self.yours_no_spec_tps

    @property
    def reference_ms_forward(self) -> float:
        """The reference's target forward: 1000 / its no-spec TPS."""
        return 1000.0 / self.reference_no_spec_tps

    @property
    def yours_ms_overhead(self) -> float:
        """Your speculation overhead: time per pass − target forward."""
        return self.yours_ms_per_pass - self.yours_ms_forward

    @property
    def reference_ms_overhead(self) -> float:
        """The reference's speculation overhead."""
        return self.reference_ms_per_pass - self.reference_ms_forward

    def extra_shares(self) -> tuple[float, float] | None:
        """(target forward, overhead) shares of your extra milliseconds per pass (None: no extra)."""
        extra = self.yours_ms_per_pass - self.reference_ms_per_pass
        if extra <= 0:
            return None
        fwd = self.yours_ms_forward - self.reference_ms_forward
        return fwd / extra, (self.yours_ms_overhead - self.reference_ms_overhead) / extra

    @staticmethod
    def _slower(yours: float, theirs: float) -> bool:
        return yours > theirs * (1 + SAME_WITHIN) if theirs > 0 else yours > 0

    @property
    def forward_slower(self) -> bool:
        """Whether your target forward takes longer than the reference's (beyond :data:`SAME_WITHIN`)."""
        return self._slower(self.yours_ms_forward, self.reference_ms_forward)

    @property
    def overhead_larger(self) -> bool:
        """Whether your speculation overhead is larger than the reference's (beyond :data:`SAME_WITHIN`)."""
        return self._slower(self.yours_ms_overhead, self.reference_ms_overhead)

    @property
    def held_by(self) -> str:
        """``target forward``, ``speculation overhead``, ``both`` or ``neither``."""
        fwd, ovh = self.forward_slower, self.overhead_larger
        return (
            "both"
            if fwd and ovh
            else "target forward"
            if fwd
            else "speculation overhead"
            if ovh
            else "neither"
        )

    def verdict(self) -> str:
        """One sentence with the four figures and what they point at."""
        figures = (
            f"target forward {self.yours_ms_forward:.1f} vs {self.reference_ms_forward:.1f} ms "
            f"(1000 / no-spec TPS {self.yours_no_spec_tps:g} vs {self.reference_no_spec_tps:g}); "
            f"speculation overhead {self.yours_ms_overhead:.1f} vs {self.reference_ms_overhead:.1f} ms "
            "(time per pass − forward)"
        )
        shares = self.extra_shares()
        split = (
            f" — of your {self.yours_ms_per_pass - self.reference_ms_per_pass:.1f} extra ms per pass, "
            f"{max(shares[0], 0):.0%} target forward, {max(shares[1], 0):.0%} overhead"
            if shares is not None
            else ""
        )
        point = {
            "target forward": "the target runs slower: the engine, GPU or power side",
            "speculation overhead": "speculating costs more: the drafter's path (an eager drafter on sm_8x "
            "with FlashInfer, vllm #54992)",
            "both": "both the target forward and the speculation overhead are slower",
            "neither": "neither part is slower than the reference's",
        }[self.held_by]
        return f"No-spec split: {figures}{split}; {point}."

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output (``gap_split.no_spec``)."""
        return {
            "yours_ms_forward": round(self.yours_ms_forward, 2),
            "reference_ms_forward": round(self.reference_ms_forward, 2),
            "yours_ms_overhead": round(self.yours_ms_overhead, 2),
            "reference_ms_overhead": round(self.reference_ms_overhead, 2),
            "yours_no_spec_tps": self.yours_no_spec_tps,
            "reference_no_spec_tps": self.reference_no_spec_tps,
            "yours_source": self.yours_source,
            "reference_source": self.reference_source,
            "held_by": self.held_by,
            "verdict": self.verdict(),
        }


def reference_no_spec(inp: DiagnosisInput) -> tuple[float, Reference] | None:
    """The reference's own no-spec narrative TPS: a published row of its source that runs without
    speculative decoding (the recipe's "minimal: no spec decode")."""
    for ref in inp.published:
        flags = ref.engine_flags()
        if flags is not None and flags.speculates is False and ref.numbers.narrative_tps:
            return ref.numbers.narrative_tps, ref
    return None


def no_spec_split(
    inp: DiagnosisInput, yours_ms_per_pass: float, reference_ms_per_pass: float
) -> NoSpecSplit | None:
    """The split when your no-spec TPS is known (typed, or the profile's stored A/B without speculative
    decoding) and the reference publishes a no-spec row; None otherwise."""
    m = inp.measured_numbers()
    if m is None or not m.no_spec_tps:
        return None
    theirs = reference_no_spec(inp)
    if theirs is None:
        return None
    tps, row = theirs
    return NoSpecSplit(
        m.no_spec_tps, tps, yours_ms_per_pass, reference_ms_per_pass, m.no_spec_source, f"reference {row.id}"
    )
