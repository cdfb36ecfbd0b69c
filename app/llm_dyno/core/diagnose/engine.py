"""Run the rules over one input and rank what they find."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from llm_dyno.core.bench.roofline import GIB, Roofline, roofline, separate_draft_bytes
from llm_dyno.core.diagnose import rules as registry
from llm_dyno.core.diagnose.causes import Cause, Verdict, rank_causes
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput, user_fingerprint
from llm_dyno.core.diagnose.evidence import Finding, Severity
from llm_dyno.core.diagnose.fingerprint import (
    WEIGHTS,
    FingerprintRow,
    compare,
    reference_fingerprint,
)
from llm_dyno.core.diagnose.gap_split import GapSplit, gap_split
from llm_dyno.core.diagnose.questions import Answer, answer_questions
from llm_dyno.core.diagnose.rules import Rule
from llm_dyno.core.diagnose.rules_inputs import INPUTS_RULE


@dataclass(frozen=True)
class Diagnosis:
    """Ranked findings, the decode ceiling when it can be computed, and rules that broke (id, error).

    ``findings`` holds the performance findings in rank order, then the security ones: those are
    shown, but apart, since they say nothing about the speed that was asked about. ``split`` divides
    the gap into tokens per pass and time per pass; ``boot`` is the boot-log fingerprint against the
    reference's (differences first); ``causes`` the field's known causes with a verdict for this case.
    ``checked`` names every rule that ran and what it looked at: (rule id, looks at).
    """

    findings: tuple[Finding, ...]
    roofline: Roofline | None = None
    rule_errors: tuple[tuple[str, str], ...] = ()
    split: GapSplit | None = None
    boot: tuple[FingerprintRow, ...] = ()
    causes: tuple[Cause, ...] = ()
    checked: tuple[tuple[str, str], ...] = ()
    answers: tuple[Answer, ...] = ()  # the questions a user of such a setup asks, answered

    @property
    def performance(self) -> tuple[Finding, ...]:
        """Findings about speed, most likely effect on the asked-for figure first."""
        return tuple(f for f in self.findings if not f.impact.security)

    @property
    def security(self) -> tuple[Finding, ...]:
        """Findings about exposure (not part of the performance ranking)."""
        return tuple(f for f in self.findings if f.impact.security)

    def ids(self) -> list[str]:
        """Finding ids in rank order."""
        return [f.id for f in self.findings]

    def get(self, finding_id: str) -> Finding | None:
        """The finding of that id, if any."""
        return next((f for f in self.findings if f.id == finding_id), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        r = self.roofline
        return {
            "findings": [f.to_dict() for f in self.performance],
            "security": [f.to_dict() for f in self.security],
            "roofline": None
            if r is None
            else {
                "ceiling_tps": r.ceiling_tps,
                "achieved_tps": r.achieved_tps,
                "achieved_share": r.achieved_share,
                "bandwidth_bytes_s": r.bandwidth_bytes_s,
                "bandwidth_source": r.bandwidth_source,
                "weights_bytes": r.weights_bytes,
                "weights_source": r.weights_source,
                "mean_acceptance_length": r.mean_acceptance_length,
                "tokens_per_pass_source": r.tokens_source,
                "tokens_per_pass_assumed": r.tokens_assumed,
                "engine_ceiling_tps": r.engine_ceiling_tps,
                "problem": r.problem,
                "assumptions": r.assumptions(),
                "summary": r.describe(),
            },
            "rule_errors": [{"rule": i, "error": e} for i, e in self.rule_errors],
            "gap_split": None if self.split is None else self.split.to_dict(),
            "boot_log": [row.to_dict() for row in self.boot],
            "causes": [c.to_dict() for c in self.causes],
            "questions": [a.to_dict() for a in self.answers],
            "rules": [
                {"id": i, "looks_at": looks, "found": sum(f.id == i for f in self.findings)}
                for i, looks in self.checked
            ],
        }


def rank(findings: Sequence[Finding]) -> list[Finding]:
    """Performance findings, most likely impact first (severity, then estimated TPS share, then start-up
    seconds); then the security findings, ranked alike among themselves. Inputs that contradict the
    profile come before everything: the other findings read them as the profile's."""
    return sorted(findings, key=lambda f: (f.id != INPUTS_RULE, f.impact.security, *f.rank_key()))


def diagnose(inp: DiagnosisInput, rules: Sequence[Rule] | None = None) -> Diagnosis:
    """Every finding the rules (by default the registry's) make on ``inp``, ranked; a rule that raises
    is reported, not fatal."""
    rules = registry.RULES if rules is None else rules
    found: list[Finding] = []
    errors: list[tuple[str, str]] = []
    for rule in rules:
        try:
            found.extend(rule.check(inp))
        except Exception as exc:  # one broken rule must not hide what the others found
            errors.append((rule.id, f"{type(exc).__name__}: {exc}"))
    m = inp.measured_numbers()
    achieved = None
    if m is not None:
        tps = [x for x in (m.narrative_tps, m.code_tps) if x is not None]
        achieved = max(tps) if tps else None
    r = inp.rates
    engine_bytes = (
        r.read_bytes_per_s / r.generation_tps
        if r is not None and r.read_bytes_per_s and r.generation_tps and r.generation_tps > 0
        else None
    )
    gpu, gpu_from = _roofline_gpu(inp)
    ceiling = roofline(
        inp.log.lines,
        gpu,
        (*inp.gpu_under_load, *inp.gpu_before),
        m.mean_acceptance_length if m is not None else None,
        achieved,
        tokens_source=m.acceptance_from if m is not None else "given",
        speculative_tokens=inp.speculative_tokens(),
        draft_bytes_per_pass=separate_draft_bytes(inp.profile.engine().speculative_config)
        if inp.profile
        else 0.0,
        engine_bytes_per_token=engine_bytes,
        stated_weights=_post_weights(inp),
    )
    if ceiling is not None and gpu_from:
        ceiling = replace(
            ceiling, bandwidth_source=f"{ceiling.bandwidth_source}; the GPU {gpu} from {gpu_from}"
        )
    split = gap_split(inp)
    boot: tuple[FingerprintRow, ...] = ()
    if inp.log.lines or inp.reference is not None:
        theirs = reference_fingerprint(inp.reference, inp.reference_log) if inp.reference else None
        boot = compare(user_fingerprint(inp), theirs)
    causes = rank_causes(inp, split, boot) if inp.reference is not None else ()
    checked = tuple((rule.id, rule.looks_at) for rule in rules)
    ranked = tuple(rank(_agree_with_causes(found, causes)))
    answers = answer_questions(inp, split, boot, causes, ranked)
    return Diagnosis(ranked, ceiling, tuple(errors), split, boot, causes, checked, answers)


def _roofline_gpu(inp: DiagnosisInput) -> tuple[str | None, str]:
    """The GPU the roofline is for and, where it is not this machine's, what named it: the environment
    or a reading, else the pasted post's, else the reference's (its claim is "the same GPU model")."""
    if (name := inp.gpu_name()) is not None:
        return name, ""
    if inp.post is not None and inp.post.gpu is not None:
        return inp.post.gpu.value, inp.post.gpu.where
    if inp.reference is not None and inp.reference.hardware.gpu:
        return inp.reference.hardware.gpu, f"reference {inp.reference.id}"
    return None, ""


def _post_weights(inp: DiagnosisInput) -> tuple[float, str] | None:
    """The weights a pasted post states ("Model VRAM: 16.87 GiB") in bytes, and its line."""
    fact = inp.post.fingerprint().get(WEIGHTS) if inp.post is not None else None
    found = re.match(r"(\d+(?:\.\d+)?) GiB", fact.value) if fact is not None else None
    return (float(found.group(1)) * GIB, fact.where) if fact is not None and found is not None else None


def _agree_with_causes(found: list[Finding], causes: Sequence[Cause]) -> list[Finding]:
    """One verdict per mechanism: a finding whose cause the split rules out (e.g. another build while
    time per pass equals the reference's) drops to info and says why, instead of ranking on its own."""
    ruled_out = {c.finding: c.reason for c in causes if c.finding and c.verdict is Verdict.NOT_THE_CAUSE}
    out = []
    for f in found:
        why = ruled_out.get(f.id)
        if why is None or f.impact.security:
            out.append(f)
            continue
        basis = f"not the difference here: {why}" + (f" ({f.impact.basis})" if f.impact.basis else "")
        out.append(replace(f, severity=Severity.INFO, impact=replace(f.impact, tps_pct=None, basis=basis)))
    return out
