"""The questions a user of a slower spec-decode setup asks (the founding post asks all six), each
answered with a verdict and the evidence this diagnosis holds. A question it cannot answer says what
would answer it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm_dyno.core.diagnose import fingerprint as fpm
from llm_dyno.core.diagnose.causes import Cause
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import Finding
from llm_dyno.core.diagnose.fingerprint import FingerprintRow
from llm_dyno.core.diagnose.gap_split import GapSplit
from llm_dyno.core.records import fields_dict


@dataclass(frozen=True)
class Answer:
    """One question, its short verdict (``yes``, ``no``, ``not the difference``, ``unknown``, …) and why."""

    id: str
    question: str
    verdict: str
    evidence: str

    def to_dict(self) -> dict[str, str]:
        """JSON form (its fields)."""
        return fields_dict(self)


def _row(rows: Sequence[FingerprintRow], fact: str) -> FingerprintRow | None:
    return next((r for r in rows if r.fact == fact), None)


def _cause(causes: Sequence[Cause], cause_id: str) -> Cause | None:
    return next((c for c in causes if c.id == cause_id), None)


def _piecewise(rows: Sequence[FingerprintRow], causes: Sequence[Cause]) -> Answer:
    q = "Does the reference run PIECEWISE CUDA graphs too?"
    r, c = _row(rows, fpm.CG_MODE), _cause(causes, "piecewise")
    if r is not None and r.reference:
        theirs = r.reference.split()[0]
        same = r.yours is not None and r.yours.split()[0] == theirs
        verdict = "yes" if theirs == "PIECEWISE" else f"no: it runs {theirs}"
        return Answer(
            "piecewise",
            q,
            verdict + (", as yours: not the difference" if same else ", unlike yours"),
            f"yours {r.yours or 'unknown'}; the reference's {r.reference}",
        )
    return Answer(
        "piecewise",
        q,
        "unknown",
        (c.reason + " " if c else "") + "Its boot log would say: pass it with --reference-log.",
    )


def _drafted(inp: DiagnosisInput, split: GapSplit | None) -> Answer:
    q = "What drafted throughput should I expect?"
    k = inp.speculative_tokens()
    if split is None or not k:
        return Answer("drafted-throughput", q, "unknown", "needs your TPS, acceptance and draft count (K)")
    p = split.prompts[0]
    yours = k * p.yours.tps / p.yours.tokens_per_pass
    ref_k = len(inp.reference.numbers.acceptance_per_position) if inp.reference is not None else 0
    ref_k = ref_k or k
    theirs = ref_k * p.reference.tps / p.reference.tokens_per_pass
    held = split.held_by
    verdict = (
        "it follows the passes: time per pass is the bottleneck"
        if held == "time per pass"
        else "it follows the drafts: acceptance is short"
        if held == "acceptance"
        else held
    )
    return Answer(
        "drafted-throughput",
        q,
        verdict,
        f"drafted = K × TPS / mean acceptance length: {p.prompt} yours {k} × {p.yours.tps:g} / "
        f"{p.yours.tokens_per_pass:.2f} = {yours:.1f} tok/s; the reference's {ref_k} × {p.reference.tps:g} / "
        f"{p.reference.tokens_per_pass:.2f} = {theirs:.1f} tok/s (×{yours / theirs:.2f}, passes ×"
        f"{p.pass_rate_ratio:.2f})",
    )


def _compile_cache(findings: Sequence[Finding]) -> Answer:
    q = "Does the torch.compile cache matter once warm?"
    f = next((f for f in findings if f.id == "compile-cache-not-on-volume"), None)
    cost = f" (+{f.impact.startup_s:.0f} s per start here)" if f is not None and f.impact.startup_s else ""
    return Answer(
        "compile-cache",
        q,
        "no: start-up time only",
        f"a cache off a volume is compiled again in each new container{cost}; a warm server runs "
        "the compiled graphs from memory, so decode speed is the same.",
    )


def _model_path(inp: DiagnosisInput, rows: Sequence[FingerprintRow], findings: Sequence[Finding]) -> Answer:
    q = "Does a local model path instead of the repo name matter?"
    if any(f.id == "log-not-from-this-profile" for f in findings):
        return Answer("model-path", q, "check first", "the log does not match this profile (first finding)")
    w = _row(rows, fpm.WEIGHTS)
    weights = f"; weights in memory {w.yours}" if w is not None and w.yours else ""
    model = inp.profile.model if inp.profile is not None else "the profile's model"
    return Answer(
        "model-path",
        q,
        "not the difference if the folder holds the same files",
        f"vLLM reads config.json and the weights from {model} as from a download{weights}: "
        "compare 'Model loading took … GiB' with the reference's.",
    )


def _patches(inp: DiagnosisInput, rows: Sequence[FingerprintRow]) -> Answer:
    q = "Would another Genesis patch version change TPS?"
    r = _row(rows, fpm.PATCHES)
    yours = f"yours: {r.yours}; " if r is not None and r.yours else ""
    # the reference itself may be one of the two rows (e.g. diagnosed against the default row)
    rows_of_source = [x for x in (inp.reference, *inp.published) if x is not None]
    no_genesis = next((x for x in rows_of_source if "no-genesis" in x.id), None)
    with_genesis = next((x for x in rows_of_source if x.id.endswith("default-20k")), None)
    if no_genesis is not None and with_genesis is not None:
        a, b = no_genesis.numbers, with_genesis.numbers
        return Answer(
            "patches",
            q,
            "not the difference",
            f"{yours}the reference's own rows: no-Genesis MTP {a.narrative_tps:g} / {a.code_tps:g} TPS "
            f"vs default {b.narrative_tps:g} / {b.code_tps:g} ({no_genesis.id}, {with_genesis.id}): "
            "the patches measured about neutral on the fp8 + MTP path.",
        )
    return Answer(
        "patches",
        q,
        "unknown",
        f"{yours}a row of the reference without its patches would say (none published here).",
    )


def _batched(inp: DiagnosisInput, causes: Sequence[Cause]) -> Answer:
    engine = inp.profile.engine() if inp.profile is not None else None
    value = (
        f" {engine.max_num_batched_tokens}" if engine is not None and engine.max_num_batched_tokens else ""
    )
    q = f"Is --max-num-batched-tokens{value} a better or worse setting at one sequence?"
    c = _cause(causes, "batched-tokens")
    return Answer(
        "batched-tokens",
        q,
        "not the cause",
        (c.reason if c else "") + " It sizes prefill chunks; a single decoding stream schedules "
        "K+1 tokens a step.",
    )


def answer_questions(
    inp: DiagnosisInput,
    split: GapSplit | None,
    rows: Sequence[FingerprintRow],
    causes: Sequence[Cause],
    findings: Sequence[Finding],
) -> tuple[Answer, ...]:
    """The six questions, answered for a speculating profile compared with a reference (else none)."""
    if inp.reference is None or not inp.speculative_tokens():
        return ()
    return (
        _piecewise(rows, causes),
        _drafted(inp, split),
        _compile_cache(findings),
        _model_path(inp, rows, findings),
        _patches(inp, rows),
        _batched(inp, causes),
    )
