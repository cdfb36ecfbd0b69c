"""What a tune found: per trial TPS, tokens per joule, watts and acceptance; the knee, the Pareto front
of TPS against watts, and a recommendation with its evidence and noise verdicts.

**Knee rule** (stated wherever the knee is shown): the knee is the trial with the *smallest knob values*
(compared knob by knob in the order the knobs were given; a knob whose values are not numbers in the
order its values were given) whose wall TPS lies within ``tolerance`` (5 %) of the best trial's. Wall
TPS is the mean over the suite's prompts of their counted runs' mean, as in the power-cap sweep.
**Noise rule**: the trials differ only when the best trial's wall TPS beats the worst's by more than
``NOISE_FACTOR`` (2) times the run-to-run spread (the largest coefficient of variation of any trial's
counted runs, per prompt, over all its repeats); else the tune says "no difference within noise" and
recommends nothing. One counted run per trial gives no spread: nothing is recommended either.
Verdicts are the history compare's (:func:`~llm_dyno.core.bench.stats.compare_samples`: Welch's t-test
at 95 %, differences under 1 % within noise), per prompt on the counted runs' wall TPS.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.run_readings import sum_acceptance
from llm_dyno.core.bench.stats import Comparison, Verdict, compare_samples
from llm_dyno.core.bench.sweep import merge_rounds
from llm_dyno.core.tune.knobs import Setting, current_value
from llm_dyno.core.tune.record import TuneRecord
from llm_dyno.core.tune.trials import Trial

KNEE_TOLERANCE = 0.05
NOISE_FACTOR = 2.0
KNEE_RULE = (
    "the trial with the smallest knob values (knob by knob, in the order given) whose wall TPS is within "
    "{pct:g} % of the best trial's"
)
VERDICT_WORDS = {
    Verdict.BETTER: "better",
    Verdict.WORSE: "worse",
    Verdict.WITHIN_NOISE: "within noise",
    Verdict.UNKNOWN: "unknown",
}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class TrialSummary:
    """One trial over all its repeats."""

    trial: Trial
    result: BenchResult | None  # the repeats merged into one result
    wall_tps: float | None
    decode_tps: float | None
    tokens_per_j: float | None
    mean_power_w: float | None
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    completion_tokens: int  # every generated token of every run, warm-ups included
    measured_runs: int
    temps_before_c: tuple[float, ...]
    errors: tuple[str, ...]

    def samples(self, prompt: str) -> list[float]:
        """The counted runs' wall TPS of one prompt (what verdicts compare)."""
        p = self.result.prompt(prompt) if self.result is not None else None
        return p.values("wall_tps") if p is not None else []


def summarize_trial(record: TuneRecord, trial: Trial) -> TrialSummary:
    """Merge a trial's repeats and reduce them to the tune's columns."""
    runs = record.runs_of(trial.index)
    results = [r.result for r in runs if r.result is not None and r.result.all_runs()]
    merged = merge_rounds(results) if results else None
    wall: list[float] = []
    decode: list[float] = []
    per_j: list[float] = []
    watts: list[float] = []
    measured = []
    for prompt in merged.prompts if merged is not None else []:
        if (s := prompt.summary("wall_tps")) is not None:
            wall.append(s.mean)
        if (s := prompt.summary("decode_tps")) is not None:
            decode.append(s.mean)
        per_j.extend(prompt.values("tokens_per_j"))
        measured.extend(prompt.measured)
    for run in measured:
        if run.energy is not None and run.energy.mean_power_w is not None:
            watts.append(run.energy.mean_power_w)
    acc = sum_acceptance([r.acceptance for r in measured])
    return TrialSummary(
        trial,
        merged,
        _mean(wall),
        _mean(decode),
        _mean(per_j),
        _mean(watts),
        acc.rate if acc is not None else None,
        acc.mean_length if acc is not None else None,
        sum(r.completion_tokens for r in runs),
        len(measured),
        tuple(r.temp_before_c for r in runs if r.temp_before_c is not None),
        tuple(r.error for r in runs if r.error),
    )


@dataclass(frozen=True)
class Recommendation:
    """The knee trial and why: its numbers against the best and the profile's own setting."""

    trial: Trial
    settings: tuple[Setting, ...]
    evidence: tuple[str, ...]
    against_best: tuple[tuple[str, Comparison], ...]  # per prompt: knee vs the fastest trial
    against_baseline: tuple[tuple[str, Comparison], ...]  # per prompt: knee vs the profile's own setting
    baseline: Trial | None
    verdict: str  # in words, of the knee against the baseline (or the best when no baseline)


@dataclass(frozen=True)
class TuneAnalysis:
    """Every trial's summary, the best, the knee, the Pareto front and the recommendation."""

    summaries: tuple[TrialSummary, ...]
    best: TrialSummary | None
    knee: TrialSummary | None
    pareto: tuple[int, ...]  # trial numbers on the TPS-against-watts front, fewest watts first
    recommendation: Recommendation | None
    rule: str
    tolerance: float
    noise: str | None = None  # why nothing is recommended when the trials do not differ beyond noise

    def summary(self, trial: int) -> TrialSummary:
        """A trial's summary by number."""
        return next(s for s in self.summaries if s.trial.index == trial)


def _order_key(record: TuneRecord, trial: Trial) -> tuple[float, ...]:
    key: list[float] = []
    for v in record.varies:
        value = trial.value(v.knob.label)
        setting = Setting(v.knob, value or "")
        number = setting.number()
        key.append(number if number is not None else float(v.values.index(value) if value in v.values else 0))
    return tuple(key)


def pareto_front(summaries: tuple[TrialSummary, ...]) -> tuple[int, ...]:
    """Trials no other beats on both TPS (higher) and mean watts (lower), fewest watts first."""
    scored = [s for s in summaries if s.wall_tps is not None and s.mean_power_w is not None]
    front = []
    for s in scored:
        dominated = any(
            o is not s
            and (o.wall_tps or 0) >= (s.wall_tps or 0)
            and (o.mean_power_w or 0) <= (s.mean_power_w or 0)
            and ((o.wall_tps or 0) > (s.wall_tps or 0) or (o.mean_power_w or 0) < (s.mean_power_w or 0))
            for o in scored
        )
        if not dominated:
            front.append(s)
    return tuple(s.trial.index for s in sorted(front, key=lambda s: s.mean_power_w or 0))


def _verdicts(base: TrialSummary, cand: TrialSummary) -> tuple[tuple[str, Comparison], ...]:
    if base.result is None:
        return ()
    out = []
    for prompt in base.result.prompts:
        a, b = base.samples(prompt.name), cand.samples(prompt.name)
        if a and b:
            out.append((prompt.name, compare_samples("wall_tps", a, b)))
    return tuple(out)


def verdict_word(rows: tuple[tuple[str, Comparison], ...]) -> str:
    """One word for several prompts: the same verdict for all, else "mixed"."""
    words = {VERDICT_WORDS[c.verdict] for _, c in rows}
    return words.pop() if len(words) == 1 else ("mixed" if words else "unknown")


def run_spread(summaries: list[TrialSummary]) -> float | None:
    """The largest coefficient of variation of a trial's counted runs (wall TPS, per prompt, over all
    its repeats); None when no trial has two counted runs of a prompt."""
    cvs: list[float] = []
    for s in summaries:
        for prompt in s.result.prompts if s.result is not None else ():
            values = s.samples(prompt.name)
            mean = _mean(values)
            if len(values) >= 2 and mean:
                var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
                cvs.append(var**0.5 / mean)
    return max(cvs) if cvs else None


def within_noise(scored: list[TrialSummary]) -> str | None:
    """Why the trials do not differ beyond their noise (see the noise rule), or None when they do."""
    tps = [s.wall_tps for s in scored if s.wall_tps]
    if len(tps) < 2:
        return None  # one trial: nothing to tell apart
    best, worst = max(tps), min(tps)
    diff = (best - worst) / best
    cv = run_spread(scored)
    if cv is None:
        return (
            f"cannot tell: one counted run per trial gives no run-to-run spread "
            f"(best and worst differ by {diff * 100:.0f} %); run each trial 3 times or more"
        )
    if diff <= NOISE_FACTOR * cv:
        return (
            f"no difference within noise: the best and worst trials differ by {diff * 100:.0f} % of wall "
            f"TPS, within {NOISE_FACTOR:g}× the run-to-run spread (CV up to {cv * 100:.0f} %)"
        )
    return None


def _baseline(
    record: TuneRecord, summaries: tuple[TrialSummary, ...], profile_values: dict[str, str]
) -> TrialSummary | None:
    for s in summaries:
        if all(profile_values.get(x.knob.label) == x.value for x in s.trial.settings):
            return s
    return None


def analyse(
    record: TuneRecord, *, tolerance: float = KNEE_TOLERANCE, profile_values: dict[str, str] | None = None
) -> TuneAnalysis:
    """Summaries, knee, front and recommendation of a tune (see the module docstring for the rules).
    ``profile_values`` are the profile's own knob values (by knob label), to judge the knee against."""
    summaries = tuple(summarize_trial(record, t) for t in record.trials)
    scored = [s for s in summaries if s.wall_tps is not None]
    rule = KNEE_RULE.format(pct=tolerance * 100)
    if not scored:
        return TuneAnalysis(summaries, None, None, pareto_front(summaries), None, rule, tolerance)
    best = max(scored, key=lambda s: s.wall_tps or 0)
    noise = within_noise(scored)
    if noise is not None:
        return TuneAnalysis(summaries, best, None, pareto_front(summaries), None, rule, tolerance, noise)
    near = [s for s in scored if (s.wall_tps or 0) >= (best.wall_tps or 0) * (1 - tolerance)]
    knee = min(near, key=lambda s: _order_key(record, s.trial))
    baseline = _baseline(record, summaries, profile_values or {})
    against_best = _verdicts(best, knee)
    against_base = _verdicts(baseline, knee) if baseline is not None and baseline is not knee else ()
    evidence = [
        f"trial {knee.trial.index} ({knee.trial.label}): {_f(knee.wall_tps)} wall TPS, "
        f"{(knee.wall_tps or 0) / (best.wall_tps or 1) * 100:.0f} % of the best",
        f"best: trial {best.trial.index} ({best.trial.label}) at {_f(best.wall_tps)} wall TPS"
        + (f"; knee vs best: {verdict_word(against_best)}" if knee is not best else " (the knee itself)"),
    ]
    if knee.tokens_per_j is not None and best.tokens_per_j:
        evidence.append(
            f"tokens/J {_f(knee.tokens_per_j, 3)} vs {_f(best.tokens_per_j, 3)} "
            f"({(knee.tokens_per_j / best.tokens_per_j - 1) * 100:+.0f} %)"
        )
    if knee.mean_power_w is not None and best.mean_power_w is not None:
        evidence.append(f"mean power {knee.mean_power_w:.0f} W vs {best.mean_power_w:.0f} W")
    temps = [t for s in summaries for t in s.temps_before_c]
    if temps:
        evidence.append(f"GPU {min(temps):.0f}–{max(temps):.0f} °C before the trials (interleaved repeats)")
    if baseline is not None and baseline is not knee:
        evidence.append(
            f"against the profile's own setting (trial {baseline.trial.index}, "
            f"{_f(baseline.wall_tps)} wall TPS): {verdict_word(against_base)}"
        )
    verdict = (
        verdict_word(against_base)
        if against_base
        else (verdict_word(against_best) if knee is not best else "the fastest trial")
    )
    rec = Recommendation(
        knee.trial, knee.trial.settings, tuple(evidence), against_best, against_base,
        baseline.trial if baseline is not None else None, verdict,
    )  # fmt: skip
    return TuneAnalysis(summaries, best, knee, pareto_front(summaries), rec, rule, tolerance)


def profile_values(profile: object, record: TuneRecord) -> dict[str, str]:
    """The profile's own value of each knob the tune varied (by label), for the baseline trial."""
    from llm_dyno.core.profiles.model import Profile

    if not isinstance(profile, Profile):
        return {}
    out = {}
    for v in record.varies:
        value = current_value(profile, v.knob)
        if value is not None:
            out[v.knob.label] = value
    return out


def _f(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"
