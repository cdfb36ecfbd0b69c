"""Statistics over benchmark runs: summaries with Student-t confidence intervals, and noise-aware verdicts.

The comparison rule (documented here because users will ask): two results differ on a metric when
**Welch's t-test** rejects "equal means" at the 5 % level (two-sided), using each side's measured runs
as the samples. With fewer than two runs on either side, or zero spread on both, no test is possible
and the verdict falls back to a relative threshold (``min_effect``, default 1 %). Whatever the test
says, differences smaller than ``min_effect`` of the baseline are reported as within noise, since
nobody can act on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field, computed_field

from llm_dyno.core.records import Record

# Two-sided 95 % Student-t quantiles t_{0.975, df} for df = 1..30 (standard table values).
_T975 = (
    12.7062,
    4.3027,
    3.1824,
    2.7764,
    2.5706,
    2.4469,
    2.3646,
    2.3060,
    2.2622,
    2.2281,
    2.2010,
    2.1788,
    2.1604,
    2.1448,
    2.1314,
    2.1199,
    2.1098,
    2.1009,
    2.0930,
    2.0860,
    2.0796,
    2.0739,
    2.0687,
    2.0639,
    2.0595,
    2.0555,
    2.0518,
    2.0484,
    2.0452,
    2.0423,
)
_Z975 = 1.959964


def t_quantile_975(df: float) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (df may be fractional).

    Table values for df ≤ 30 (linear interpolation between integers), then the Cornish-Fisher
    expansion around the normal quantile, accurate to better than 1e-3 beyond df 30.
    """
    if df <= 0 or math.isnan(df):
        raise ValueError("degrees of freedom must be positive")
    if df < 1:
        return _T975[0]  # conservative: smaller df would be even wider
    if df <= 30:
        lo = int(df)
        if lo == 30 or df == lo:
            return _T975[lo - 1]
        frac = df - lo
        return _T975[lo - 1] + (_T975[lo] - _T975[lo - 1]) * frac
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


class Summary(Record):
    """Mean, sample standard deviation, coefficient of variation, range and 95 % CI of one metric; its
    JSON (``model_dump``, a prompt summary's entries) writes the CI as ``ci95: [low, high]``."""

    n: int
    mean: float
    std: float
    cv: float
    min: float
    max: float
    ci95_low: float = Field(exclude=True)
    ci95_high: float = Field(exclude=True)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ci95(self) -> tuple[float, float]:
        """The 95 % confidence interval of the mean (low, high)."""
        return (self.ci95_low, self.ci95_high)


def summarize(values: Sequence[float]) -> Summary | None:
    """Summarise samples; ``None`` when there are none. One sample gives std 0 and a zero-width CI.

    Samples that are all >= 0 are of a quantity that cannot be negative here (rates, times, energy per
    token): the CI is cut at 0 then (few runs with a wide spread give a t-interval reaching below 0,
    a TPS nobody could measure)."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return None
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    half = t_quantile_975(n - 1) * std / math.sqrt(n) if n > 1 else 0.0
    cv = std / mean if mean else 0.0
    low = mean - half
    if min(xs) >= 0:
        low = max(low, 0.0)
    return Summary(
        n=n, mean=mean, std=std, cv=cv, min=min(xs), max=max(xs), ci95_low=low, ci95_high=mean + half
    )


class Verdict(StrEnum):
    """How a candidate compares with a baseline on one metric."""

    BETTER = "better"
    WORSE = "worse"
    WITHIN_NOISE = "within noise"
    UNKNOWN = "unknown"


class Comparison(Record):
    """The verdict on one metric, with the numbers behind it (``model_dump``: its fields, the verdict as
    its word)."""

    metric: str
    baseline_mean: float | None
    candidate_mean: float | None
    delta_pct: float | None
    verdict: Verdict
    rule: str


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float] | None:
    """Welch's t statistic (b − a) and its Welch–Satterthwaite degrees of freedom.

    ``None`` when either side has fewer than two samples or both have zero variance.
    """
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return None
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    sa, sb = va / na, vb / nb
    if sa + sb == 0:
        return None
    t = (mb - ma) / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / ((sa**2 / (na - 1) if na > 1 else 0) + (sb**2 / (nb - 1) if nb > 1 else 0))
    return t, df


def compare_samples(
    metric: str,
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    higher_is_better: bool = True,
    min_effect: float = 0.01,
) -> Comparison:
    """Judge ``candidate`` against ``baseline`` on one metric (see the module docstring for the rule)."""
    if not baseline or not candidate:
        return Comparison(
            metric=metric, baseline_mean=_mean(baseline), candidate_mean=_mean(candidate), delta_pct=None,
            verdict=Verdict.UNKNOWN, rule="no data",
        )  # fmt: skip
    ma, mb = sum(baseline) / len(baseline), sum(candidate) / len(candidate)
    delta_pct = (mb - ma) / ma * 100 if ma else None
    small = ma != 0 and abs(mb - ma) / abs(ma) < min_effect
    test = welch(baseline, candidate)
    if test is None:
        rule = f"fewer than 2 runs or no spread: relative threshold {min_effect:.0%}"
        significant = not small and mb != ma
    else:
        t, df = test
        significant = abs(t) > t_quantile_975(df) and not small
        rule = f"Welch t={t:.2f}, df={df:.1f}, |t| > {t_quantile_975(df):.2f} at 95 %"
        if small:
            rule += f"; |Δ| below {min_effect:.0%}"
    if not significant:
        verdict = Verdict.WITHIN_NOISE
    elif (mb > ma) == higher_is_better:
        verdict = Verdict.BETTER
    else:
        verdict = Verdict.WORSE
    return Comparison(
        metric=metric, baseline_mean=ma, candidate_mean=mb, delta_pct=delta_pct, verdict=verdict, rule=rule
    )


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
