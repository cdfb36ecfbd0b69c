"""The dashboard watches the GPUs a server really uses: the launch plan's, several at once (tensor
parallel), or through the server's container on a remote Docker host / an attached server.

GPU readings are the ones recorded on a real H200 (tests/fixtures/nvml); the container tests run a
real container whose nvidia-smi replays them. NVML reads fail here (no driver), which the tests expect.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.docker_backend import DockerRuntime
from llm_dyno.core.runtime.gpu_source import GpuSource
from llm_dyno.core.runtime.process_backend import ProcessRuntime
from llm_dyno.core.runtime.remote_gpu import ContainerGpuSampler, parse_smi_csv
from llm_dyno.core.telemetry.attach import AttachedServer, load_attached
from llm_dyno.core.telemetry.nvml import GpuSample, GpuSampler, nvml
from llm_dyno.core.telemetry.power import PowerLimit
from llm_dyno.ui.dashboard import Dashboard
from llm_dyno.ui.dashboard.feed import TelemetryFeed
from llm_dyno.ui.dialogs.attach_dialog import AttachDialog
from llm_dyno.ui.views.server_view import NO_GPU_IN_WINDOW, ServerView
from tests.support import vllm_env
from tests.ui.shown import shown_dashboard

NVML = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
T0 = 1_800_000_000.0
NO_DRIVER = nvml().available()  # None on a machine with an NVIDIA driver


def nowhere() -> str:
    return f"http://127.0.0.1:{vllm_env.free_port()}"


def latest(dash: Dashboard, name: str) -> float | None:
    x = dash.series.series(name).latest() if name in dash.series else None
    return None if x is None else x[1]


@pytest.fixture
def view(qtbot) -> Iterator[ServerView]:  # type: ignore[no-untyped-def]
    sv = ServerView()
    qtbot.addWidget(sv)
    sv.show()
    yield sv
    for d in sv.dashboards.values():
        d.stop_watching()


def ready(sv: ServerView, profile: Profile, runtime: DockerRuntime | ProcessRuntime) -> Dashboard:
    plan = runtime.plan(profile)
    status = ServerStatus(ServerState.READY, time.time())
    sv.set_status(profile.name, status, plan.base_url, plan.runtime, plan)
    dash = shown_dashboard(sv)
    assert dash is not None and dash.live
    return dash


def test_two_gpus_are_one_server(dash: Dashboard) -> None:
    idle = parse_smi_csv((NVML / "smi_idle.csv").read_text())[0]  # 80.89 W, 36 °C, 0 %, SM 345 MHz
    load = replace(parse_smi_csv((NVML / "smi_load.csv").read_text())[0], index=1)  # 688.73 W, 58 °C, 99 %
    dash.watch(url_endpoint(nowhere(), ""), "tp2", gpus=GpuSource.local((0, 1)))
    dash.stop_watching()  # only the samples fed here
    for i in range(5):
        dash.feed_gpu(GpuSample(0.0, (idle, load)), t=T0 + i)
    dash.redraw()
    assert latest(dash, "power_w") == pytest.approx(769.62)  # summed
    assert latest(dash, "power_limit_w") == pytest.approx(1400.0)  # 2 × 700 W
    assert latest(dash, "util_pct") == pytest.approx(49.5)  # mean
    assert latest(dash, "temp_c") == pytest.approx(58.0)  # the hottest
    assert latest(dash, "sm_clock_mhz") == pytest.approx(877.5)  # mean
    assert dash.header.text("power") == "770 / 1400 W" and dash.header.text("temp") == "58 °C"
    assert dash.header.captions["power"].text() == "Power / limit · GPU 0+1"
    assert dash.header.captions["temp"].text() == "Temperature · GPU 0+1"
    assert "summed over the 2 GPUs" in dash.header.captions["power"].toolTip()
    assert "power 770 W" in dash.readout_at(T0 + 2) and "limit 1400 W" in dash.readout_at(T0 + 2)
    assert dash.plots.widgets["power"].isVisible() and not dash.gpu_notice.isVisible()
    # one GPU: its own values, and no "summed" note
    dash.watch(url_endpoint(nowhere(), ""), "one", gpus=GpuSource.local((0,)))
    dash.stop_watching()
    dash.feed_gpu(GpuSample(0.0, (load,)), t=T0)
    assert (latest(dash, "power_w"), latest(dash, "temp_c")) == (688.73, 58.0)
    assert dash.header.captions["power"].text() == "Power / limit · GPU 0"
    assert dash.header.captions["power"].toolTip() == ""


def test_power_sum_needs_every_gpu(dash: Dashboard) -> None:
    idle = parse_smi_csv((NVML / "smi_idle.csv").read_text())[0]
    blind = replace(idle, index=1, power_w=None, temperature_c=None)  # "[N/A]" on one GPU
    dash.feed_gpu(GpuSample(0.0, (idle, blind)), t=T0)
    assert math.isnan(latest(dash, "power_w") or 0.0)  # a gap, not 80.89 W posing as the total
    assert latest(dash, "temp_c") == 36.0


def test_launched_profile_watches_the_plan_gpus(view: ServerView) -> None:
    profile = Profile(name="tp2", model="tiny", runtime="process", gpus=(1, 2),
                      args=("--tensor-parallel-size", "2"))  # fmt: skip
    dash = ready(view, profile, ProcessRuntime())
    assert dash.gpu_source == GpuSource.local((1, 2))
    assert dash.header.captions["power"].text() == "Power / limit · GPU 1+2"
    titles = {k: w.getPlotItem().titleLabel.text for k, w in dash.plots.widgets.items()}
    assert "GPU power · W · GPU 1+2" in titles["power"] and "GPU 1+2" in titles["clock"]
    assert "GPU" not in titles["tokens"]
    if NO_DRIVER:  # no NVML here: nothing sampled, and the dashboard says why
        assert dash.feed.gpu_sampler is None
        assert NO_DRIVER in dash.gpu_notice.text() and dash.gpu_notice.isVisible()
        assert dash.power.status.text() == f"Unavailable: {NO_DRIVER}"
    else:
        sampler = dash.feed.gpu_sampler
        assert isinstance(sampler, GpuSampler) and sampler.gpus == (1, 2)
        assert dash.power.gpus == (1, 2)


def test_feed_samples_exactly_the_asked_gpus(qtbot) -> None:  # type: ignore[no-untyped-def]
    feed = TelemetryFeed()
    with qtbot.waitSignal(feed.gpuSampled, timeout=10_000) as got:
        feed.start(url_endpoint(nowhere(), ""), gpus=GpuSource.local((1, 2)), gpu_interval_s=0.05)
    try:
        sampler = feed.gpu_sampler
        assert isinstance(sampler, GpuSampler) and sampler.gpus == (1, 2)
        sample: GpuSample = got.args[0]
        if NO_DRIVER:
            assert sample.readings == () and sample.error == NO_DRIVER
        else:
            assert sample.error is not None or [r.index for r in sample.readings] == [1, 2]
    finally:
        feed.stop()
    assert not feed.running


def test_feed_stops_sampling_when_its_window_is_deleted(qtbot, caplog) -> None:  # type: ignore[no-untyped-def]
    """A window closed without stopping its feed: the samplers end with it, and nothing logs a
    sample sent to a deleted object."""
    from PySide6.QtWidgets import QWidget

    owner = QWidget()
    feed = TelemetryFeed(owner)
    with qtbot.waitSignal(feed.gpuSampled, timeout=10_000):
        feed.start(
            url_endpoint(nowhere(), ""),
            gpus=GpuSource.local((0,)),
            metrics_interval_s=0.05,
            gpu_interval_s=0.05,
        )
    samplers = [feed.metrics_sampler, feed.gpu_sampler]
    assert all(s is not None and s.running for s in samplers)
    owner.deleteLater()
    qtbot.waitUntil(lambda: not any(s.running for s in samplers if s is not None), timeout=10_000)
    time.sleep(0.2)
    assert "sink failed" not in caplog.text


def test_cpu_profile_has_no_gpu_plots(view: ServerView) -> None:
    demo = Profile(name="cpu-demo", model="tiny", runtime="process")
    dash = ready(view, demo, ProcessRuntime())
    assert dash.gpu_source is None and dash.feed.gpu_sampler is None
    assert NO_GPU_IN_WINDOW in dash.gpu_notice.text() and not dash.plots.widgets["power"].isVisible()
    assert dash.header.captions["power"].text() == "Power / limit"
    # no power, temperature or power control for a server that uses no GPU: hidden, the notice says why
    header = dash.header
    assert not header.values["power"].isVisibleTo(header) and not header.values["temp"].isVisibleTo(header)
    assert header.values["kv_pct"].isVisibleTo(header) and not dash.power.isVisibleTo(dash)


def test_remote_docker_profile_reads_through_its_container(  # type: ignore[no-untyped-def]
    qtbot, view: ServerView
) -> None:
    settings = DockerSettings(image="vllm/vllm-openai:v0.11.0", host="tcp://gpu-box.invalid:2376",
                              container_name="vllm-tp2", ports=("0.0.0.0:8000:8000",))  # fmt: skip
    profile = Profile(name="remote tp2", model="m", docker=settings, gpus=(1, 2))
    dash = ready(view, profile, DockerRuntime())
    sampler = dash.feed.gpu_sampler
    assert isinstance(sampler, ContainerGpuSampler)
    assert (sampler.container, sampler.host, sampler.gpus) == ("vllm-tp2", "tcp://gpu-box.invalid:2376", None)
    assert dash.header.captions["power"].text() == "Power / limit · GPU 1+2"
    assert "container vllm-tp2 on gpu-box.invalid" in dash.power.status.text()
    # no such machine: the first sample says so, naming the host
    unreachable = "cannot reach tcp://gpu-box.invalid:2376"
    qtbot.waitUntil(lambda: unreachable in dash.gpu_notice.text(), timeout=30_000)


def test_power_control_targets_every_gpu_or_one(dash: Dashboard) -> None:
    p = dash.power
    p.set_gpus((1, 2))
    p._got_limit((PowerLimit(1, 330.0, 700.0, 200.0, 700.0, 330.0),
                  PowerLimit(2, 350.0, 700.0, 250.0, 650.0, 350.0)))  # fmt: skip
    assert p.target.isVisibleTo(p) and p.target.count() == 3
    assert p.target.currentText() == "All (GPU 1+2)" and p.targets == (1, 2)
    assert (p.spin.minimum(), p.spin.maximum()) == (250, 650)  # what both GPUs allow
    assert "GPU 1 330 W · GPU 2 350 W · allowed 250–650 W" in p.status.text()
    assert "same limit on each GPU" in p.target.toolTip()
    p.target.setCurrentIndex(1)
    assert p.targets == (1,) and (p.spin.minimum(), p.spin.maximum(), p.spin.value()) == (200, 700, 330)
    assert "enforced 330 W · requested 330 W · allowed 200–700 W" in p.status.text()
    p.set_gpus((0,))
    assert not p.target.isVisibleTo(p) and p.targets == (0,)


def test_attach_dialog_gpu_via_container(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    d = AttachDialog()
    qtbot.addWidget(d)
    assert not d.via_container.isEnabled()  # nothing to read through without a container
    d.url.setText("http://gpu-box:8000")
    d.container.setText("vllm-qwen")
    assert d.via_container.isEnabled()
    d.via_container.setChecked(True)
    d.accept()
    assert d.server == AttachedServer("http://gpu-box:8000", "vllm-qwen", gpu_index=0, gpu_via_container=True)
    assert load_attached() == [d.server]
    again = AttachDialog()
    qtbot.addWidget(again)
    again.remembered.setCurrentIndex(1)
    assert again.via_container.isChecked() and again.entered() == d.server


# ---- through a real container on the local Docker engine ----------------------------------------
@pytest.mark.docker
def test_attached_server_gpu_via_its_container(  # type: ignore[no-untyped-def]
    qtbot, view: ServerView, smi_container: Callable[..., str], ui_home: Path
) -> None:
    name = smi_container("attached", FAKE_SMI_GPUS="idle,load")
    view.watch_attached(AttachedServer(nowhere(), container=name, gpu_index=1, gpu_via_container=True))
    dash = shown_dashboard(view)
    assert dash is not None and isinstance(dash.feed.gpu_sampler, ContainerGpuSampler)
    qtbot.waitUntil(lambda: latest(dash, "power_w") is not None, timeout=20_000)
    assert latest(dash, "power_w") == 688.73 and latest(dash, "temp_c") == 58.0  # GPU 1: the load recording
    assert dash.plots.widgets["power"].isVisible() and not dash.gpu_notice.isVisible()
    assert "GPUs read from container" in dash.power.status.text()


@pytest.mark.docker
def test_container_with_two_gpus_sums_them(  # type: ignore[no-untyped-def]
    qtbot, dash: Dashboard, smi_container: Callable[..., str]
) -> None:
    name = smi_container("tp2", FAKE_SMI_GPUS="idle,load")
    dash.watch(url_endpoint(nowhere(), ""), "tp2", gpus=GpuSource(None, (1, 2), name))
    qtbot.waitUntil(lambda: latest(dash, "power_w") is not None, timeout=20_000)
    assert latest(dash, "power_w") == pytest.approx(80.89 + 688.73)
    assert latest(dash, "power_limit_w") == pytest.approx(1400.0) and latest(dash, "temp_c") == 58.0


@pytest.mark.docker
def test_container_without_nvidia_smi_says_so(  # type: ignore[no-untyped-def]
    qtbot, dash: Dashboard, smi_container: Callable[..., str]
) -> None:
    name = smi_container("nosmi", PATH="/nonexistent")
    dash.watch(url_endpoint(nowhere(), ""), "no smi", gpus=GpuSource((0,), (0,), name))
    failed = f"nvidia-smi failed in container {name}"
    qtbot.waitUntil(lambda: failed in dash.gpu_notice.text(), timeout=20_000)
    assert not dash.plots.widgets["power"].isVisible()


def test_two_real_gpus_recorded_at_once_show_as_one_server(dash: Dashboard) -> None:
    """A recording of the app's GpuSampler on two real H200s (record_two_gpus.py: GPU 0 under a matmul
    load, GPU 1 idle): every point of the series is the combination of that sample's two readings."""
    from llm_dyno.ui.dashboard.replay import gpu_sample

    path = NVML / "two_gpus_sampler.jsonl"
    samples = [gpu_sample(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    assert {len(s.readings) for s in samples} == {2} and not any(s.error for s in samples)
    assert {r.index for s in samples for r in s.readings} == {0, 1}
    assert len({r.uuid for s in samples for r in s.readings}) == 2  # two distinct cards
    for i, s in enumerate(samples):
        dash.feed_gpu(s, t=T0 + i / 4)
    power = dash.series.series("power_w").recent()[1]
    limit = dash.series.series("power_limit_w").recent()[1]
    temp = dash.series.series("temp_c").recent()[1]
    util = dash.series.series("util_pct").recent()[1]
    for i, s in enumerate(samples):
        a, b = s.readings
        assert power[i] == pytest.approx((a.power_w or 0) + (b.power_w or 0))
        assert limit[i] == 1400.0  # both at 700 W
        assert temp[i] == max(a.temperature_c or 0, b.temperature_c or 0)
        assert util[i] == pytest.approx(((a.util_gpu_pct or 0) + (b.util_gpu_pct or 0)) / 2)
    # under load: GPU 0 near its cap, GPU 1 idle; the server draws both
    loaded = max(range(len(samples)), key=lambda i: power[i])
    a, b = samples[loaded].readings
    assert (a.power_w or 0) > 600 and (b.power_w or 0) < 100 and power[loaded] > 680


def test_real_nvidia_smi_of_two_gpus_parses_and_selects() -> None:
    """nvidia-smi's real output for two H200s with the app's query: both rows read, one picked, a
    GPU that is not there named in the error."""
    from llm_dyno.core.runtime.remote_gpu import select_gpus

    rows = parse_smi_csv((NVML / "two_gpus_smi.csv").read_text())
    assert [r.index for r in rows] == [0, 1] and rows[0].uuid != rows[1].uuid
    assert all(r.min_limit_w == 200.0 and r.max_limit_w == 700.0 for r in rows)
    one = select_gpus(rows, (1,), where="container x")
    assert [r.index for r in one.readings] == [1] and one.readings[0].power_w == pytest.approx(77.47)
    missing = select_gpus(rows, (5,), where="container x")
    assert missing.readings == () and missing.error == "container x shows GPU 0, 1, not GPU 5"
