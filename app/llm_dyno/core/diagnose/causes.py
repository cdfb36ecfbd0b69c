"""Causes of a "same config, slower rig" gap, in the order the field's published evidence ranks them,
each judged against what this diagnosis knows: likely, possible, unknown, too small, or not the cause.

The ranking and the effect sizes come from shared/reference/FIELD_EVIDENCE.md (each cause names its
sources); the judgement uses the gap split, the boot-log fingerprints and the profile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from llm_dyno.core.diagnose import fingerprint as fpm
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.fingerprint import FingerprintRow
from llm_dyno.core.diagnose.gap_split import GapSplit
from llm_dyno.core.diagnose.no_spec import NoSpecSplit
from llm_dyno.core.diagnose.power_curve import cap_effect
from llm_dyno.core.diagnose.reference_profile import shared_settings
from llm_dyno.core.errors import DynoError
from llm_dyno.core.records import fields_dict


class Verdict(StrEnum):
    """How a cause stands against this case."""

    LIKELY = "likely"
    POSSIBLE = "possible"
    UNKNOWN = "unknown"
    TOO_SMALL = "too small alone"
    NOT_THE_CAUSE = "not the cause"


@dataclass(frozen=True)
class Cause:
    """A known cause, its published effect and source, and its verdict here with the reason."""

    id: str
    title: str
    effect: str
    sources: str
    verdict: Verdict
    reason: str
    # the share of the gap this cause is shown to explain (0–1; None: not quantified)
    explains: float | None = None
    # the finding that says the same for this mechanism, when there is one (shown once, as that finding)
    finding: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (its fields)."""
        return fields_dict(self)


def _row(rows: tuple[FingerprintRow, ...], fact: str) -> FingerprintRow | None:
    return next((r for r in rows if r.fact == fact), None)


def _gap_pct(split: GapSplit | None) -> float | None:
    if split is None or not split.prompts:
        return None
    return (1 - min(p.tps_ratio for p in split.prompts)) * 100


# causes that act on the time one pass takes: with time per pass equal to the reference's, none of them
# can hold the gap
TIME_PER_PASS_CAUSES = ("build", "piecewise", "capture", "kv", "host", "power")
# a pass taking within this share of the reference's is "the same time per pass"
EQUAL_TIME_WITHIN = 0.05
# the finding that says the same as a cause, per mechanism
FINDING_OF_CAUSE = {
    "build": "image-differs-from-reference",
    "piecewise": "cuda-graphs-downgraded",
    "capture": "verify-batch-not-captured",
    "acceptance": "acceptance-below-reference",
    "power": "power-cap-below-reference",
}


def equal_time_per_pass(split: GapSplit | None) -> bool:
    """Whether every prompt kind's pass takes within :data:`EQUAL_TIME_WITHIN` of the reference's."""
    if split is None or not split.prompts:
        return False
    return all(
        abs(p.yours.ms_per_pass / p.reference.ms_per_pass - 1) <= EQUAL_TIME_WITHIN for p in split.prompts
    )


def _time_text(split: GapSplit) -> str:
    return "; ".join(
        f"{p.prompt} {p.yours.ms_per_pass:.1f} vs {p.reference.ms_per_pass:.1f} ms" for p in split.prompts
    )


def rank_causes(
    inp: DiagnosisInput, split: GapSplit | None, rows: tuple[FingerprintRow, ...]
) -> tuple[Cause, ...]:
    """Every known cause with its verdict for this case, most likely first: by verdict, then by the share
    of the gap it is shown to explain, then in the field's evidence order. The split decides first: with
    time per pass equal to the reference's, no cause acting on time per pass is the cause."""
    gap = _gap_pct(split)
    out = [
        _build(rows),
        _piecewise(rows, _shares(inp)),
        _capture(rows),
        _kv(rows),
        _acceptance(split),
        _host(),
        _power(inp, split),
        _protocol(gap),
        _batched_tokens(inp),
    ]
    if split is not None and equal_time_per_pass(split) and split.held_by != "none":
        why = f"time per pass equals the reference's ({_time_text(split)}): this acts on time per pass"
        out = [
            replace(c, verdict=Verdict.NOT_THE_CAUSE, reason=f"{why}; {c.reason}", explains=0.0)
            if c.id in TIME_PER_PASS_CAUSES
            else c
            for c in out
        ]
    out = _by_no_spec(out, split.no_spec if split is not None else None)
    out = [replace(c, finding=FINDING_OF_CAUSE.get(c.id)) for c in out]
    order = {v: i for i, v in enumerate(Verdict)}
    # the field's order within equal verdict and share: a sort is stable
    return tuple(sorted(out, key=lambda c: (order[c.verdict], -(c.explains or 0.0))))


# causes on the target model's forward (engine, GPU, power side): a no-spec run measures that part
FORWARD_CAUSES = ("build", "kv", "host", "power")


def _by_no_spec(out: list[Cause], ns: NoSpecSplit | None) -> list[Cause]:
    """The no-spec split's word on the causes: the drafter's path judged by the speculation overhead;
    the engine / GPU / power side by the target forward (equal forward: not where the time goes)."""
    title = "Speculation overhead: the drafter's path"
    effect = "on sm_8x with FlashInfer and spec decode the drafter runs eager, outside the CUDA graphs"
    src = "vllm #54992, #49547"
    if ns is None:
        why = "needs your no-spec TPS (--no-spec-tps, or a spec-decode A/B) and the reference's no-spec row."
        return [*out, Cause("drafter", title, effect, src, Verdict.UNKNOWN, why)]
    shares = ns.extra_shares()
    fwd_share, ovh_share = (max(0.0, min(1.0, x)) for x in shares) if shares is not None else (0.0, 0.0)
    ovh = f"overhead {ns.yours_ms_overhead:.1f} vs {ns.reference_ms_overhead:.1f} ms per pass"
    fwd = f"target forward {ns.yours_ms_forward:.1f} vs {ns.reference_ms_forward:.1f} ms"
    if ns.overhead_larger:
        verdict = Verdict.LIKELY if ovh_share >= 0.5 else Verdict.POSSIBLE
        said = f"your {ovh}: {ovh_share:.0%} of the extra time per pass ({fwd})."
        drafter = Cause("drafter", title, effect, src, verdict, said, ovh_share)
    else:
        said = f"your {ovh}: no larger than the reference's."
        drafter = Cause("drafter", title, effect, src, Verdict.NOT_THE_CAUSE, said, 0.0)
    judged = []
    for c in out:
        if c.id not in FORWARD_CAUSES or c.verdict is Verdict.NOT_THE_CAUSE:
            judged.append(c)
        elif ns.forward_slower:
            lift = Verdict.POSSIBLE if c.verdict is Verdict.UNKNOWN else c.verdict
            said = f"{c.reason} No-spec split: your {fwd}, {fwd_share:.0%} of the extra time per pass."
            judged.append(replace(c, verdict=lift, reason=said))
        else:
            said = f"{fwd} (no-spec runs): the target runs as fast; {c.reason}"
            judged.append(replace(c, verdict=Verdict.NOT_THE_CAUSE, explains=0.0, reason=said))
    return [*judged, drafter]


def _build(rows: tuple[FingerprintRow, ...]) -> Cause:
    title, effect = (
        "Another vLLM build or patches than the reference's",
        "patches ≈ 10–15 %; a nightly before PR #41434 ≈ 15 % slower",
    )
    src = "club-3090 docs/FAQ.md, #104; vllm #57680, #51663, #53241, #47297"
    differ = [r for r in rows if r.fact in (fpm.VERSION, fpm.IMAGE, fpm.PATCHES) and r.status == "differs"]
    patches = _row(rows, fpm.PATCHES)
    failed = (
        patches is not None
        and patches.yours is not None
        and " 0 failed" not in patches.yours
        and "failed" in patches.yours
    )
    if differ or failed:
        what = "; ".join(f"{r.fact}: yours {r.yours}, reference {r.reference}" for r in differ)
        if failed and patches is not None:
            what = "; ".join(x for x in (what, f"patches: {patches.yours}") if x)
        return Cause("build", title, effect, src, Verdict.LIKELY, f"{what}.")
    version = _row(rows, fpm.VERSION)
    if version is not None and version.status == "same":
        return Cause(
            "build", title, effect, src, Verdict.NOT_THE_CAUSE, f"the same vLLM build ({version.yours})."
        )
    return Cause("build", title, effect, src, Verdict.UNKNOWN, "the reference's build is not known.")


def _shares(inp: DiagnosisInput) -> dict[str, str]:
    """The settings the reference's published compose shares with the profile (reference_profile):
    setting → value; empty without both, or when the compose cannot be read."""
    if inp.profile is None or inp.reference is None:
        return {}
    try:
        return {s.setting: s.value for s in shared_settings(inp.profile, inp.reference)}
    except DynoError:
        return {}


def _piecewise(rows: tuple[FingerprintRow, ...], shares: dict[str, str] | None = None) -> Cause:
    title = "Verify batches on PIECEWISE CUDA graphs (FlashInfer + spec decode)"
    effect = "−16 % (vllm #49547); ~22 TPS narrative on Qwen3.6-27B MTP (Genesis #6); no graphs at all −55 %"
    src = "vllm #49547, PR #49550; Genesis #6; club-3090 models/qwen3.6-27b/INTERNALS.md; syv-ai #87"
    r = _row(rows, fpm.CG_MODE)
    mine = r.yours if r is not None else None
    if mine is None:
        return Cause(
            "piecewise", title, effect, src, Verdict.UNKNOWN, "your log does not state the CUDA-graph mode."
        )
    if not mine.startswith(("PIECEWISE", "NONE")):
        return Cause("piecewise", title, effect, src, Verdict.NOT_THE_CAUSE, f"your engine runs {mine}.")
    if r is not None and r.reference is not None:
        same = r.reference.split()[0] == mine.split()[0]
        return Cause("piecewise", title, effect, src, Verdict.NOT_THE_CAUSE if same else Verdict.LIKELY,
                     f"yours {mine}; the reference's {r.reference}.")  # fmt: skip
    graph, backend = (shares or {}).get("CUDA-graph setting"), (shares or {}).get("attention backend")
    if graph is not None and backend is not None:
        # the same settings resolve alike on one build: the mode is then not the difference
        build = _row(rows, fpm.VERSION) or _row(rows, fpm.IMAGE)
        same_build = build is not None and build.status == "same"
        why = (
            f"yours runs {mine}; the reference's compose sets the same CUDA-graph setting ({graph}) and "
            f"attention backend ({backend}), so on the same build it resolves to the same mode"
        )
        if same_build:
            return Cause(
                "piecewise", title, effect, src, Verdict.NOT_THE_CAUSE, f"{why}: not the difference."
            )
        other = "differs from yours" if build is not None and build.status == "differs" else "is not known"
        return Cause("piecewise", title, effect, src, Verdict.POSSIBLE,
                     f"{why}; its build {other}, and another build can resolve them otherwise.")  # fmt: skip
    return Cause(
        "piecewise", title, effect, src, Verdict.POSSIBLE,
        f"yours runs {mine}; the reference's mode is unknown (not the cause if it logs the same downgrade; "
        "likely if it runs FULL graphs, e.g. with FLASH_ATTN).",
    )  # fmt: skip


def _capture(rows: tuple[FingerprintRow, ...]) -> Cause:
    title = "Capture sizes vs the K+1 verify batch"
    effect = (
        "batches outside the captured sizes run eager; a truncated max capture size: 25.3 → 133.3 tok/s fixed"
    )
    src = "vllm #27325, PR #30330, PR #37865 / #54933"
    trunc, verify = _row(rows, fpm.TRUNCATED), _row(rows, fpm.VERIFY)
    if trunc is not None and trunc.yours and trunc.yours.startswith("yes"):
        return Cause(
            "capture",
            title,
            effect,
            src,
            Verdict.LIKELY,
            f"your log: max capture size truncated ({trunc.yours}).",
        )
    if verify is not None and verify.yours:
        if verify.yours.startswith("NO"):
            return Cause("capture", title, effect, src, Verdict.LIKELY, f"verify batch {verify.yours}.")
        return Cause("capture", title, effect, src, Verdict.NOT_THE_CAUSE,
                     f"your verify batch is captured: {verify.yours}; no truncation warning.")  # fmt: skip
    return Cause("capture", title, effect, src, Verdict.UNKNOWN, "your log does not list the captured sizes.")


def _kv(rows: tuple[FingerprintRow, ...]) -> Cause:
    title = "KV dtype and attention path"
    effect = "TurboQuant + P65 path ≈ 25 % slower per stream than fp8"
    src = "club-3090 qwen3.6-27b CHANGELOG 2026-04-25"
    r = _row(rows, fpm.KV)
    if r is None or r.yours is None:
        return Cause("kv", title, effect, src, Verdict.UNKNOWN, "your KV dtype is not known.")
    if "turboquant" in r.yours.lower():
        return Cause("kv", title, effect, src, Verdict.LIKELY, f"you run {r.yours}.")
    if r.status == "same":
        return Cause(
            "kv",
            title,
            effect,
            src,
            Verdict.NOT_THE_CAUSE,
            f"the same KV dtype as the reference ({r.yours}).",
        )
    if r.status == "differs":
        return Cause(
            "kv", title, effect, src, Verdict.POSSIBLE, f"yours {r.yours}, the reference's {r.reference}."
        )
    return Cause("kv", title, effect, src, Verdict.UNKNOWN, "the reference's KV dtype is not known.")


def _acceptance(split: GapSplit | None) -> Cause:
    title = "Acceptance (tokens per pass)"
    effect = "code ≈ 80 % per position, prose ≈ 50 %; sampling moves it"
    src = "club-3090 bench.sh; syv-ai #3, #156"
    if split is None:
        return Cause("acceptance", title, effect, src, Verdict.UNKNOWN,
                     "needs your TPS and the reference's, and the acceptance of a side that speculates "
                     "(the gap split).")  # fmt: skip
    p = split.prompts[0]
    figures = (
        f"{p.yours.tokens_per_pass:.2f} tokens per pass vs the reference's {p.reference.tokens_per_pass:.2f}"
    )
    if split.by_position:
        figures = f"per position {split.position_text()}"
    if split.acceptance_is_cause:
        share = max(0.0, min(1.0, split.share_of_gap(p)[0])) if p.tps_ratio < 1 else None
        more = f"; {share:.0%} of the gap" if share is not None else ""
        return Cause(
            "acceptance", title, effect, src, Verdict.LIKELY, f"{figures} (×{p.acceptance_ratio:.2f}{more}).",
            share,
        )  # fmt: skip
    uniform = " and the gap is the same on prose and code" if split.uniform else ""
    return Cause("acceptance", title, effect, src, Verdict.NOT_THE_CAUSE,
                 f"{figures}: equal or better{uniform}; the gap is in time per pass.")  # fmt: skip


def _host() -> Cause:
    return Cause(
        "host", "Host: WSL2 shared memory, display on the GPU, PCIe topology",
        "WSL2 spilling into shared memory (syv-ai #156); multi-GPU PCIe topology −40 %",
        "syv-ai #156; club-3090 docs/HARDWARE.md, #1098", Verdict.UNKNOWN,
        "not visible here: check for WSL2 (shared GPU memory in use) and what else uses the GPU.",
    )  # fmt: skip


def _power(inp: DiagnosisInput, split: GapSplit | None) -> Cause:
    title = "Power cap"
    effect = (
        "330 W ≈ 5 % below ~388 W stock; single-card decode knee ≈ 290 W; a 3090 ~33 → ~43 TPS 230 → 330 W"
    )
    src = "club-3090 power-cap-sweep.sh, #58; docs/HARDWARE.md, #761, #773; the founding post"
    ref = inp.reference
    cap = inp.power_cap()
    theirs = ref.hardware.power_limit_w if ref is not None else None
    if cap is None or theirs is None or ref is None:
        return Cause("power", title, effect, src, Verdict.UNKNOWN, "a cap is not known for both sides.")
    mine, where = cap
    if mine >= theirs:
        said = "" if where == "profile" else f" ({where})"
        above = (
            f"your cap {mine:g} W{said} is {'above' if mine > theirs else 'at'} the reference's {theirs:g} W."
        )
        return Cause("power", title, effect, src, Verdict.NOT_THE_CAUSE, above)
    below = f"your cap {mine:g} W ({where}) is below the reference's {theirs:g} W"
    quantified = []
    for p in split.prompts if split is not None else ():
        eff = cap_effect(ref, mine, p.prompt)
        if eff is not None:
            quantified.append((p, eff))
    if not quantified:
        return Cause("power", title, effect, src, Verdict.POSSIBLE,
                     f"{below}; the reference publishes no TPS at your cap to size it.")  # fmt: skip
    parts, shares = [], []
    for p, eff in quantified:
        share = math.log(eff.expected_ratio) / math.log(p.tps_ratio) if p.tps_ratio < 1 else 0.0
        shares.append(max(0.0, min(1.0, share)))
        parts.append(
            f"{p.prompt}: ×{eff.expected_ratio:.2f} expected at {mine:g} W, yours ×{p.tps_ratio:.2f}"
        )
    explains = min(shares)
    basis = quantified[0][1].basis
    verdict = Verdict.LIKELY if explains >= 0.5 else Verdict.POSSIBLE
    whole = " — the cap explains the gap" if explains >= 0.9 else f" — the cap explains {explains:.0%} of it"
    return Cause(
        "power", title, effect, src, verdict, f"{below}; {basis}: {'; '.join(parts)}{whole}.", explains
    )


def _protocol(gap: float | None) -> Cause:
    title, effect = "Protocol: cold vs heat-soaked GPU, single measurements", "≈ 4 %"
    src = "club-3090 #922; vllm #57680"
    if gap is not None and gap > 10:
        return Cause(
            "protocol", title, effect, src, Verdict.TOO_SMALL, f"≈ 4 % cannot explain a {gap:.0f} % gap."
        )
    return Cause(
        "protocol", title, effect, src, Verdict.POSSIBLE, "state the thermal condition; use a median of 5."
    )


def _batched_tokens(inp: DiagnosisInput) -> Cause:
    title = "--max-num-batched-tokens"
    effect = "no source ties it to decode speed (a prefill / memory knob)"
    src = "club-3090 CHANGELOG #847 / #849"
    return Cause("batched-tokens", title, effect, src, Verdict.NOT_THE_CAUSE,
                 "no published evidence that it changes single-stream decode.")  # fmt: skip
