"""Rules about the reference itself: does it run the same engine settings, and do its numbers stand up
against what its own source published?

The first thing an expert checks in "mine is 20 TPS slower than the reference" is whether the reference
is comparable (same speculative decoding, KV dtype) and whether the figure quoted is the one its source
measured: the founding post compares 43 / 54 TPS with a quoted 66 / 84, while the recipe's own README
table shows 53.4–55.0 / 68.2–70.5 for its MTP variants at 230 W on its pinned nightly.

Where the reference publishes its compose, its start script is compared too (Genesis patch layout,
packages installed at start); the allocator setting is checked on the user's profile alone.
"""

from __future__ import annotations

from llm_dyno.core.diagnose.claim_sources import cite
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
from llm_dyno.core.diagnose.reference_profile import alloc_conf_fix, genesis_setup, start_packages
from llm_dyno.core.diagnose.references import EngineFlags, Reference
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile

_ABOVE = 1.05  # a claim this much above the best published row is not the same measurement


def _ours(inp: DiagnosisInput) -> EngineFlags | None:
    if inp.profile is None:
        return None
    e = inp.profile.engine()
    spec = e.speculative_config
    return EngineFlags(
        speculative_method=str(spec.get("method") or "draft") if spec else "none",
        num_speculative_tokens=e.num_speculative_tokens,
        kv_cache_dtype=e.kv_cache_dtype,
        max_model_len=e.max_model_len,
    )


@rule("spec-decode-differs-from-reference", "profile, reference")
def engine_flags_differ(inp: DiagnosisInput) -> list[Finding]:
    """Speculative decoding set differently from the reference's."""
    ref = inp.reference
    ours = _ours(inp)
    theirs = ref.engine_flags() if ref is not None else None
    if ref is None or ours is None or theirs is None:
        return []
    out: list[Finding] = []
    if ours.speculates is not None and theirs.speculates is not None:
        evidence: tuple[Evidence, ...] = (
            MetricEvidence("speculative decoding", ours.describe_spec(), reference=theirs.describe_spec(),
                           source="profile"),
        )  # fmt: skip
        if ours.speculates and not theirs.speculates:
            out.append(
                Finding(
                    THIS_RULE,
                    f"The reference runs without speculative decoding; you run {ours.describe_spec()}",
                    Severity.HIGH,
                    Impact(
                        basis="not comparable: speculative decoding changes single-stream TPS by itself "
                        "(the recipe: 32.4 / 32.6 TPS without, 55.0 / 70.5 with MTP n=3)"
                    ),
                    evidence,
                    "Compare with a reference that runs the same speculative decoding, or benchmark your "
                    "profile without it (llm-dyno ab) to compare like with like.",
                    fix_label="spec decode",
                )
            )
        elif theirs.speculates and not ours.speculates:
            out.append(
                Finding(
                    THIS_RULE,
                    f"The reference speculates ({theirs.describe_spec()}); you do not",
                    Severity.HIGH,
                    Impact(
                        tps_pct=40.0,
                        basis="the recipe: 32.4 / 32.6 TPS without spec decoding, 55.0 / 70.5 "
                        "with MTP n=3 (−41 % / −54 %)",
                    ),
                    evidence,
                    f"Add the reference's speculative decoding ({theirs.describe_spec()}) to compare like "
                    "with like.",
                    fix_label="spec decode",
                )
            )
        elif (
            ours.speculates
            and ours.num_speculative_tokens
            and theirs.num_speculative_tokens
            and ours.num_speculative_tokens != theirs.num_speculative_tokens
        ):
            out.append(
                Finding(
                    THIS_RULE,
                    f"{ours.num_speculative_tokens} speculative tokens against the reference's "
                    f"{theirs.num_speculative_tokens}",
                    Severity.MEDIUM,
                    Impact(basis="more tokens per step pay off only while later positions are accepted"),
                    evidence,
                    "Use the reference's num_speculative_tokens to compare like with like.",
                    fix_label="spec tokens",
                )
            )
    return out


@rule("kv-dtype-differs-from-reference", "profile, reference")
def kv_dtype_differs(inp: DiagnosisInput) -> list[Finding]:
    """The KV-cache dtype set differently from the reference's."""
    ref = inp.reference
    ours = _ours(inp)
    theirs = ref.engine_flags() if ref is not None else None
    if ref is None or ours is None or theirs is None:
        return []
    out: list[Finding] = []
    if (
        ours.kv_cache_dtype
        and theirs.kv_cache_dtype
        and not _same_kv(ours.kv_cache_dtype, theirs.kv_cache_dtype)
    ):
        out.append(
            Finding(
                THIS_RULE,
                f"KV cache {ours.kv_cache_dtype} against the reference's {theirs.kv_cache_dtype}",
                Severity.LOW,
                Impact(basis="at short context the KV cache is a small share of the bytes read per step"),
                (
                    MetricEvidence(
                        "KV cache dtype",
                        ours.kv_cache_dtype,
                        reference=theirs.kv_cache_dtype,
                        source="profile",
                    ),
                ),
                "Use the reference's --kv-cache-dtype to compare like with like.",
                fix_label="kv dtype",
            )
        )
    return out


def _same_kv(a: str, b: str) -> bool:
    # "fp8" is vLLM's alias of fp8_e4m3 on CUDA; e5m2 is another format but the same size per value
    return a == b or {a, b} <= {"fp8", "fp8_e4m3", "fp8_e5m2"}


def _comparable_rows(ref: Reference, rows: tuple[Reference, ...]) -> list[Reference]:
    """The source's other rows with the reference's speculative setting and KV-cache dtype (a setting
    either side does not state counts as the same)."""
    mine = ref.engine_flags() or EngineFlags()
    out = []
    for row in rows:
        if row.id == ref.id or (row.numbers.narrative_tps is None and row.numbers.code_tps is None):
            continue
        theirs = row.engine_flags() or EngineFlags()
        if None not in (mine.speculates, theirs.speculates) and mine.speculates != theirs.speculates:
            continue
        kv = (mine.kv_cache_dtype, theirs.kv_cache_dtype)
        if None not in kv and not _same_kv(*kv):  # type: ignore[arg-type]
            continue
        out.append(row)
    return out


@rule("claim-above-published", "reference, its source's other rows")
def claim_above_published(inp: DiagnosisInput) -> list[Finding]:
    """The reference's figures are above what its own source measured for the same setup."""
    ref = inp.reference
    if ref is None or not inp.published:
        return []
    rows = _comparable_rows(ref, inp.published)
    if not rows:
        return []
    gaps: list[tuple[str, float, float, float, float]] = []  # prompt, claimed, lo, hi, cost %
    for prompt in ("narrative", "code"):
        claimed = getattr(ref.numbers, f"{prompt}_tps")
        values = [v for r in rows if (v := getattr(r.numbers, f"{prompt}_tps")) is not None]
        if claimed is None or not values or claimed <= max(values) * _ABOVE:
            continue
        gaps.append((prompt, claimed, min(values), max(values), (claimed - max(values)) / claimed * 100))
    if not gaps:
        return []
    m = inp.measured_numbers()
    claimed_txt = " / ".join(f"{c:g}" for _, c, *_ in gaps)
    best_txt = " / ".join(f"{hi:g}" for _, _, _, hi, _ in gaps)
    table_txt = " / ".join(f"{lo:g}–{hi:g}" if lo != hi else f"{hi:g}" for _, _, lo, hi, _ in gaps)
    hw = ref.hardware
    where = ", ".join(
        x for x in (f"{hw.power_limit_w:.0f} W" if hw.power_limit_w else "", ref.vllm_version or "") if x
    )
    evidence: list[Evidence] = [
        MetricEvidence(f"{p} TPS claimed", c, reference=f"{lo:g}–{hi:g} published", source=ref.id)
        for p, c, lo, hi, _ in gaps
    ]
    evidence += [
        MetricEvidence(f"{r.id}", f"{r.numbers.narrative_tps:g} / {r.numbers.code_tps:g}", unit="TPS",
                       source=r.source.url or "published")
        for r in rows
        if r.numbers.narrative_tps is not None and r.numbers.code_tps is not None
    ]  # fmt: skip
    yours = ""
    if m is not None:
        parts = [
            f"{mine:g} is {mine / hi:.0%} of {hi:g}"
            for p, _, _, hi, _ in gaps
            if (mine := getattr(m, f"{p}_tps")) is not None
        ]
        cap = inp.power_cap()
        rows_cap = next((r.hardware.power_limit_w for r in rows if r.hardware.power_limit_w), None)
        if parts and cap is not None and rows_cap is not None and abs(cap[0] - rows_cap) > 5:
            # figures at another cap than the rows' compare two things at once
            yours = (
                f" Against the table: {'; '.join(parts)} — but your figures are at {cap[0]:g} W and the "
                f"rows at {rows_cap:g} W: compare at the same cap (set {rows_cap:g} W, or a reference "
                "measured at yours)."
            )
        elif parts:
            yours = f" Against the table your figures are not far off: {'; '.join(parts)}."
    cost = max(g[4] for g in gaps)
    return [
        Finding(
            THIS_RULE,
            f"Claimed {claimed_txt} TPS; its source's own table: {best_txt} at best",
            Severity.HIGH,
            Impact(
                tps_pct=round(cost, 1),
                basis=f"{cost:.0f} % of the claimed figure is above the best row its source published for "
                "the same speculative setting",
            ),
            tuple(evidence),
            f"Compare with the published rows ({table_txt} TPS" + (f", {where}" if where else "") + "), not "
            f"the quoted claim: they are what the source measured on its pinned image.{yours} Then look at "
            "what differs from those rows (image pin, CUDA graphs).",
            fix_label="reference",
        )
    ]


def _published_profile(ref: Reference) -> Profile | None:
    """The reference's configuration when it publishes one it can read (None: figures only)."""
    try:
        return ref.load_profile()
    except DynoError:
        return None  # an unreadable compose is reported by the reference diff, not by every rule


@rule("genesis-differs-from-reference", "profile start script and env, the reference's compose")
def genesis_differs(inp: DiagnosisInput) -> list[Finding]:
    """Another Genesis patch set than the reference's: v5.x single script against v7.x modular, opt-ins."""
    ref, mine = inp.reference, inp.profile
    theirs = _published_profile(ref) if ref is not None and mine is not None else None
    if ref is None or mine is None or theirs is None:
        return []
    ga, gb = genesis_setup(mine), genesis_setup(theirs)
    if ga.describe() == gb.describe():
        return []
    evidence: list[Evidence] = [
        MetricEvidence("Genesis patches", ga.describe(), reference=gb.describe(), source="start scripts")
    ]
    stated = ref.stated_facts.get("start-script patches")
    if stated:
        evidence.append(
            MetricEvidence("the reference's patch results", stated, source=cite("genesis-results"))
        )
    if gb.layout == "v7.x modular package":
        opt = " ".join(f"GENESIS_ENABLE_{o}=1" for o in gb.opt_ins)
        advice = (
            "To run the reference's patches: mount Genesis v7.x's package read-only at "
            "/usr/local/lib/python3.12/dist-packages/vllm/_genesis, run `python3 -m "
            f"vllm._genesis.patches.apply_all` in place of `{ga.command or 'your patch script'}`"
            + (f", and set {opt} (v7.x patches are off unless opted in)" if opt else "")
            + ". Or compare without patches on both sides: the recipe's no-Genesis row "
            "(recipe-3090-no-genesis-mtp) runs the same setup with none."
        )
    elif gb.layout == "none":
        advice = (
            "The reference runs no Genesis patches: drop yours (the start script) to compare like with like."
        )
    else:
        advice = f"Run the reference's patch step ({gb.command}) to compare like with like."
    return [
        Finding(
            THIS_RULE,
            f"Genesis: yours {ga.layout}, the reference's {gb.layout}",
            Severity.LOW,
            Impact(
                basis="not a measured cost: the recipe measured its Genesis neutral on the fp8 + MTP path "
                "(55.0 / 70.5 TPS with v7.54, 54.7 / 68.2 without); a difference to remove before "
                f"comparing ({cite('genesis-neutral')})"
            ),
            tuple(evidence),
            advice,
            fix_label="genesis",
        )
    ]


@rule("start-packages-differ-from-reference", "profile start script, the reference's compose")
def start_packages_differ(inp: DiagnosisInput) -> list[Finding]:
    """The start script installs other packages than the reference's (pip, unpinned, at every start)."""
    ref, mine = inp.reference, inp.profile
    theirs = _published_profile(ref) if ref is not None and mine is not None else None
    if ref is None or mine is None or theirs is None:
        return []
    pa, pb = start_packages(mine), start_packages(theirs)
    if pa == pb or not pa or not pb:  # a side with no start-time install: the Genesis finding says it
        return []
    missing = [p for p in pb if p not in pa]
    extra = [p for p in pa if p not in pb]
    parts = []
    if missing:
        parts.append(f"add {' '.join(missing)} (the reference installs them)")
    if extra:
        parts.append(f"drop {' '.join(extra)} (the reference does not)")
    pins = " ".join(f"{p}==VERSION" for p in pb) or "none"
    mine_txt, theirs_txt = " ".join(pa) or "nothing", " ".join(pb) or "nothing"
    return [
        Finding(
            THIS_RULE,
            f"Start script installs {mine_txt}; the reference's installs {theirs_txt}",
            Severity.LOW,
            Impact(basis=f"reproducibility, not a measured speed cost: {cite('start-packages')}"),
            (MetricEvidence("pip install at start", mine_txt, reference=theirs_txt, source="start scripts"),),
            f"To run what the reference ran: {'; '.join(parts)} in the start script's pip install line. "
            f"Better: build the image once with the packages pinned (RUN pip install {pins}) so every "
            "start runs the same code, and note the versions beside your numbers.",
            fix_label="packages",
        )
    ]


@rule("alloc-conf-key-value", "profile environment (PYTORCH_CUDA_ALLOC_CONF)")
def alloc_conf_key_value(inp: DiagnosisInput) -> list[Finding]:
    """``PYTORCH_CUDA_ALLOC_CONF`` items written ``key=value``: PyTorch reads ``key:value``, refuses them."""
    fix = alloc_conf_fix(inp.profile) if inp.profile is not None else None
    if fix is None:
        return []
    wrong = ", ".join(fix.wrong_items)
    return [
        Finding(
            THIS_RULE,
            f"{fix.variable} writes {wrong}: PyTorch reads key:value",
            Severity.MEDIUM,
            Impact(
                basis=f"PyTorch refuses the item as an unknown key at the first CUDA allocation "
                f"(\"Unrecognized key '{fix.wrong_items[0]}' in CUDA allocator config\"): a server started "
                "with it fails before loading, so numbers measured with this profile ran another value "
                f"({cite('pytorch-alloc-conf')}; {cite('pytorch-alloc-parser')})"
            ),
            (MetricEvidence(fix.variable, fix.written, reference=fix.fixed, source="profile environment"),),
            f"Set {fix.variable}={fix.fixed} (option:value, options separated by commas).",
            (ProfileChange(ChangeKind.SET_ENV, key=fix.variable, value=fix.fixed),),
            "alloc conf",
        )
    ]
