"""Split a TPS gap into its two factors: tokens per pass × passes per second.

With speculative decoding each forward pass (draft + verify) yields on average the mean acceptance
length in tokens, so decode TPS = mean acceptance length / time per pass. Comparing the two factors for
the user and the reference says whether the gap is in acceptance (the drafts) or in the time one pass
takes (the engine, build, graphs, GPU). A gap of the same ratio on prose and code points at time per
pass too (syv-ai/qwen38-27b-rtx3090 #3, shared/reference/FIELD_EVIDENCE.md §5). Without speculative
decoding a pass yields exactly one token, so no acceptance figure is needed for that side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.no_spec import NoSpecSplit, no_spec_split

# acceptance within this ratio of the reference's (or above it) cannot explain a gap
ACCEPTANCE_TOLERANCE = 0.97
# prompt kinds whose TPS ratios differ by less than this share are a "uniform" gap
UNIFORM_WITHIN = 0.05
# per-position rates within this many points (fractions) of the reference's are the same acceptance
POSITION_TOLERANCE = 0.05


@dataclass(frozen=True)
class Side:
    """One side's factors for one prompt kind."""

    tps: float
    tokens_per_pass: float
    tokens_source: str

    @property
    def ms_per_pass(self) -> float:
        """Milliseconds one forward pass takes: tokens per pass / tokens per second."""
        return self.tokens_per_pass / self.tps * 1000.0

    @property
    def passes_per_s(self) -> float:
        """Forward passes per second."""
        return self.tps / self.tokens_per_pass


@dataclass(frozen=True)
class PromptSplit:
    """Yours against the reference's for one prompt kind; ratios are yours / theirs."""

    prompt: str
    yours: Side
    reference: Side

    @property
    def tps_ratio(self) -> float:
        """Your TPS as a share of the reference's."""
        return self.yours.tps / self.reference.tps

    @property
    def acceptance_ratio(self) -> float:
        """Your tokens per pass / the reference's (above 1: yours accepts more)."""
        return self.yours.tokens_per_pass / self.reference.tokens_per_pass

    @property
    def pass_rate_ratio(self) -> float:
        """Your passes per second / the reference's (below 1: your passes take longer)."""
        return self.yours.passes_per_s / self.reference.passes_per_s

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "prompt": self.prompt,
            "tps": {"yours": self.yours.tps, "reference": self.reference.tps, "ratio": self.tps_ratio},
            "tokens_per_pass": {
                "yours": self.yours.tokens_per_pass,
                "reference": self.reference.tokens_per_pass,
                "ratio": self.acceptance_ratio,
                "yours_source": self.yours.tokens_source,
                "reference_source": self.reference.tokens_source,
            },
            "ms_per_pass": {
                "yours": round(self.yours.ms_per_pass, 2),
                "reference": round(self.reference.ms_per_pass, 2),
                "ratio": self.reference.ms_per_pass / self.yours.ms_per_pass,
            },
        }


@dataclass(frozen=True)
class GapSplit:
    """The split for each prompt kind both sides measured, and which factor holds the gap."""

    prompts: tuple[PromptSplit, ...]
    # per-position rates (yours, the reference's) when both sides give them but for different draft
    # counts: then mean lengths cannot be compared, and acceptance is compared position by position
    positions: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    # time per pass split into target forward and speculation overhead, with no-spec runs of both sides
    no_spec: NoSpecSplit | None = None

    @property
    def by_position(self) -> bool:
        """Whether acceptance is compared position by position (the two sides draft different K)."""
        return self.positions is not None

    def position_text(self) -> str:
        """``89 / 80 % vs 92 / 81 / 64 % (K 2 vs 3)`` when compared by position, else empty."""
        if self.positions is None:
            return ""
        yours, theirs = self.positions

        def pct(rates: tuple[float, ...]) -> str:
            return " / ".join(f"{r * 100:.0f}" for r in rates) + " %"

        return f"{pct(yours)} vs {pct(theirs)} (K {len(yours)} vs {len(theirs)})"

    @property
    def held_by(self) -> str:
        """``time per pass``, ``acceptance``, ``both`` or ``none`` (no gap)."""
        if all(p.tps_ratio >= 1.0 for p in self.prompts):
            return "none"
        acc = self.acceptance_is_cause
        time = any(p.pass_rate_ratio < ACCEPTANCE_TOLERANCE for p in self.prompts)
        return "both" if acc and time else "acceptance" if acc else "time per pass"

    @property
    def acceptance_is_cause(self) -> bool:
        """Whether your acceptance falls short of the reference's: tokens per pass on any prompt kind,
        or, when the sides draft different K, any position's rate by more than the tolerance."""
        if self.positions is not None:
            yours, theirs = self.positions
            return any(t - y > POSITION_TOLERANCE for y, t in zip(yours, theirs, strict=False))
        return any(p.acceptance_ratio < ACCEPTANCE_TOLERANCE for p in self.prompts)

    @property
    def uniform(self) -> bool | None:
        """Whether the gap is the same ratio on every prompt kind (None with one kind)."""
        ratios = [p.tps_ratio for p in self.prompts]
        if len(ratios) < 2:
            return None
        return (max(ratios) - min(ratios)) / max(ratios) < UNIFORM_WITHIN

    def share_of_gap(self, p: PromptSplit) -> tuple[float, float]:
        """(acceptance, time per pass) shares of the gap on a log scale (they sum to 1; a negative
        share works in your favour)."""
        total = math.log(p.tps_ratio)
        if total == 0:
            return 0.0, 0.0
        return math.log(p.acceptance_ratio) / total, math.log(p.pass_rate_ratio) / total

    def verdict(self) -> str:
        """One sentence: which factor holds the gap and by how much."""
        if self.held_by == "none":
            return "No gap: your TPS is at or above the reference's."
        parts = []
        for p in self.prompts:
            slower = p.yours.ms_per_pass / p.reference.ms_per_pass
            parts.append(f"{p.prompt} {p.yours.ms_per_pass:.1f} vs {p.reference.ms_per_pass:.1f} ms per pass "
                         f"(×{slower:.2f})")  # fmt: skip
        acc = min(self.prompts, key=lambda p: p.acceptance_ratio)  # the least in your favour
        per_kind = len({round(p.yours.tokens_per_pass, 3) for p in self.prompts}) > 1
        acc_txt = "; ".join(
            f"{p.prompt + ' ' if per_kind else ''}tokens per pass {p.yours.tokens_per_pass:.2f} vs "
            f"{p.reference.tokens_per_pass:.2f} (×{p.acceptance_ratio:.2f})"
            for p in (self.prompts if per_kind else (acc,))
        )
        if self.positions is not None:
            acc_txt = (
                f"acceptance position by position {self.position_text()} (mean lengths of different K "
                "do not compare)"
            )
        if self.held_by == "time per pass":
            return f"The gap is in time per pass, not acceptance: {'; '.join(parts)}; {acc_txt}, " + (
                "so acceptance is not the cause."
                if acc.acceptance_ratio >= 1 or self.positions is not None
                else "too close to matter."
            )
        if self.held_by == "acceptance":
            return (
                f"The gap is in acceptance: {acc_txt}; passes take about as long as the reference's "
                f"({'; '.join(parts)})."
            )
        return f"Both factors: {acc_txt}; {'; '.join(parts)}."

    def lines(self) -> list[str]:
        """Plain-text lines for a terminal."""
        out = [self.verdict()]
        for p in self.prompts:
            _, time_share = self.share_of_gap(p)
            out.append(
                f"  {p.prompt}: {p.yours.tps:g} = {p.yours.tokens_per_pass:.2f} tok/pass × "
                f"{p.yours.passes_per_s:.1f} pass/s ({p.yours.ms_per_pass:.1f} ms) | reference "
                f"{p.reference.tps:g} = {p.reference.tokens_per_pass:.2f} × {p.reference.passes_per_s:.1f} "
                f"({p.reference.ms_per_pass:.1f} ms) | ×{p.tps_ratio:.2f} = acceptance "
                f"×{p.acceptance_ratio:.2f} · passes ×{p.pass_rate_ratio:.2f} "
                f"(time per pass {time_share:.0%} of the gap)"
            )
        if self.uniform is not None:
            ratios = " / ".join(f"{p.tps_ratio:.2f}×" for p in self.prompts)
            out.append(
                f"  the gap is {'uniform' if self.uniform else 'not uniform'} across prompt kinds ({ratios})"
                + (": the same on prose and code points at step time, not acceptance" if self.uniform else "")
            )
        first = self.prompts[0]
        sources = {p.yours.tokens_source for p in self.prompts}
        yours = (
            first.yours.tokens_source if len(sources) == 1
            else ", ".join(f"{p.prompt} {p.yours.tokens_source}" for p in self.prompts)
        )  # fmt: skip
        out.append(
            f"  tokens per pass: yours from {yours}; the reference's from "
            f"{first.reference.tokens_source}; TPS as given (wall TPS includes the first token's wait)"
        )
        if self.no_spec is not None:
            out.append(f"  {self.no_spec.verdict()}")
            out.append(
                f"    no-spec TPS: yours from {self.no_spec.yours_source}; the reference's from "
                f"{self.no_spec.reference_source}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "held_by": self.held_by,
            "acceptance_is_cause": self.acceptance_is_cause,
            "acceptance_by_position": None
            if self.positions is None
            else {"yours": list(self.positions[0]), "reference": list(self.positions[1])},
            "uniform": self.uniform,
            "verdict": self.verdict(),
            "prompts": [p.to_dict() for p in self.prompts],
            "no_spec": None if self.no_spec is None else self.no_spec.to_dict(),
        }


def _tokens_per_pass(
    length: float | None, per_position: tuple[float, ...], source: str
) -> tuple[float, str] | None:
    if length:
        return length, f"mean acceptance length ({source})"
    if per_position:
        return 1.0 + sum(per_position), f"1 + per-position rates ({source})"
    return None


_ONE_PER_PASS = (1.0, "no speculative decoding: one token per pass")


def gap_split(inp: DiagnosisInput) -> GapSplit | None:
    """The split, when both sides have TPS for a prompt kind and tokens per pass: measured acceptance,
    or exactly 1 for a side that does not speculate (None otherwise)."""
    m, ref = inp.measured_numbers(), inp.reference
    if m is None or ref is None:
        return None
    mine = _tokens_per_pass(m.mean_acceptance_length, m.acceptance_per_position, m.acceptance_from)
    if mine is None and inp.speculative_tokens() == 0:
        mine = _ONE_PER_PASS
    theirs = _tokens_per_pass(
        ref.numbers.mean_acceptance_length, ref.numbers.acceptance_per_position, f"reference {ref.id}"
    )
    flags = ref.engine_flags() if theirs is None else None
    if theirs is None and flags is not None and flags.speculates is False:
        theirs = _ONE_PER_PASS
    if mine is None or theirs is None:
        return None
    prompts = []
    for prompt in ("narrative", "code"):
        a, b = getattr(m, f"{prompt}_tps"), getattr(ref.numbers, f"{prompt}_tps")
        if a and b:
            # the prompt kind's own acceptance where it was measured apart (a code prompt accepts more)
            own = m.length_of(prompt)
            yours = (own[0], f"mean acceptance length ({own[1]})") if own else mine
            prompts.append(PromptSplit(prompt, Side(a, *yours), Side(b, *theirs)))
    mine_k, theirs_k = m.acceptance_per_position, ref.numbers.acceptance_per_position
    positions = (mine_k, theirs_k) if mine_k and theirs_k and len(mine_k) != len(theirs_k) else None
    if not prompts:
        return None
    narr = next((p for p in prompts if p.prompt == "narrative"), None)
    speculates = narr is not None and narr.yours.tokens_per_pass > 1 and narr.reference.tokens_per_pass > 1
    no_spec = (
        no_spec_split(inp, narr.yours.ms_per_pass, narr.reference.ms_per_pass)
        if narr is not None and speculates
        else None
    )
    return GapSplit(tuple(prompts), positions, no_spec)
