"""Statistics and the noise verdict on data whose answers were computed by hand."""

from __future__ import annotations

import math

import pytest

from llm_dyno.core.bench.stats import Verdict, compare_samples, summarize, t_quantile_975, welch


def test_summary_of_known_values() -> None:
    # 45.1, 45.7, 44.3: mean 45.0333; deviations .0667 .6667 -.7333; SS = .9867; var .4933; std .70238
    s = summarize([45.1, 45.7, 44.3])
    assert s is not None
    assert s.n == 3 and s.mean == pytest.approx(45.03333, abs=1e-4)
    assert s.std == pytest.approx(0.702377, abs=1e-5)
    assert s.cv == pytest.approx(0.702377 / 45.03333, rel=1e-5)
    assert (s.min, s.max) == (44.3, 45.7)
    half = 4.3027 * 0.702377 / math.sqrt(3)  # t(0.975, 2) = 4.3027
    assert s.ci95_low == pytest.approx(45.03333 - half, abs=1e-4)
    assert s.ci95_high == pytest.approx(45.03333 + half, abs=1e-4)


def test_single_and_empty() -> None:
    assert summarize([]) is None
    one = summarize([3.0])
    assert one is not None and one.std == 0 and one.ci95_low == one.ci95_high == 3.0


def test_t_quantiles() -> None:
    assert t_quantile_975(1) == pytest.approx(12.7062)
    assert t_quantile_975(4) == pytest.approx(2.7764)
    assert t_quantile_975(4.5) == pytest.approx((2.7764 + 2.5706) / 2)
    assert t_quantile_975(60) == pytest.approx(2.0003, abs=1e-3)
    assert t_quantile_975(120) == pytest.approx(1.9799, abs=1e-3)
    assert t_quantile_975(1e9) == pytest.approx(1.95996, abs=1e-4)


def test_welch_by_hand() -> None:
    # a = 1,2,3 (mean 2, var 1); b = 4,5,6 (mean 5, var 1): t = 3 / sqrt(1/3 + 1/3) = 3.6742, df = 4
    t, df = welch([1, 2, 3], [4, 5, 6]) or (0, 0)
    assert t == pytest.approx(3.674235, abs=1e-5) and df == pytest.approx(4.0)


def test_verdicts() -> None:
    # |t| = 3.67 > t(0.975, 4) = 2.776: a real difference
    assert compare_samples("wall_tps", [1, 2, 3], [4, 5, 6]).verdict == Verdict.BETTER
    assert compare_samples("wall_tps", [4, 5, 6], [1, 2, 3]).verdict == Verdict.WORSE
    assert compare_samples("ttft_s", [1, 2, 3], [4, 5, 6], higher_is_better=False).verdict == Verdict.WORSE
    # a = 40, 44, 48 / b = 42, 46, 50: t = 2 / sqrt(16/3 + 16/3) = 0.612 < 2.776
    c = compare_samples("wall_tps", [40, 44, 48], [42, 46, 50])
    assert c.verdict == Verdict.WITHIN_NOISE and c.delta_pct == pytest.approx(100 * 2 / 44)


def test_tiny_but_significant_difference_is_within_noise() -> None:
    # a perfectly steady 0.5 % gain passes Welch but is below the 1 % effect threshold
    c = compare_samples("wall_tps", [100.0, 100.01, 99.99], [100.5, 100.51, 100.49])
    assert c.verdict == Verdict.WITHIN_NOISE


def test_fallback_without_spread_or_runs() -> None:
    assert compare_samples("wall_tps", [50.0], [60.0]).verdict == Verdict.BETTER
    assert compare_samples("wall_tps", [50.0], [50.2]).verdict == Verdict.WITHIN_NOISE
    assert compare_samples("wall_tps", [], [1.0]).verdict == Verdict.UNKNOWN
