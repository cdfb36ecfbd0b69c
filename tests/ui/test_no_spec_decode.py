"""A profile without speculative decoding (the shipped CPU demo) shows no acceptance plots, figures or
table that could only ever say "No data yet": one line says acceptance is not measured. A profile that
drafts tokens keeps them, waiting for data. Driven through the window: the sidebar and the view tabs."""

from __future__ import annotations

import json
import time

import numpy as np

from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.process_backend import ProcessRuntime
from llm_dyno.ui.bench.acceptance_panel import NO_RESULT, NO_SPEC_DECODE
from llm_dyno.ui.dashboard import Dashboard
from tests.ui.clicks import click_page, click_profile, click_view, grab
from tests.ui.shown import shown_dashboard

SPEC = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3})


def _ngram_demo(qtbot, window, store: ProfileStore) -> str:  # type: ignore[no-untyped-def]
    demo = store.get("cpu-demo")
    store.save(
        demo.model_copy(update={"name": "cpu-demo-ngram", "args": (*demo.args, "--speculative-config", SPEC)})
    )
    qtbot.waitUntil(lambda: "cpu-demo-ngram" in window.profile_list.names(), timeout=10_000)
    return "cpu-demo-ngram"


def _ready(window, store: ProfileStore, name: str) -> Dashboard:  # type: ignore[no-untyped-def]
    """The server of ``name`` reports ready, as the registry tells the window (no vLLM started here)."""
    plan = ProcessRuntime().plan(store.get(name))
    window.server_view.set_status(name, ServerStatus(ServerState.READY, time.time()), plan.base_url,
                                  plan.runtime, plan)  # fmt: skip
    dash = shown_dashboard(window.server_view)
    assert dash is not None and dash.live
    return dash


def _shown(widget, window) -> bool:  # type: ignore[no-untyped-def]
    return bool(widget.isVisibleTo(window))


def test_dashboard_of_a_profile_without_spec_decode_hides_acceptance(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    click_profile(window, "cpu-demo")
    click_view(window, "Dashboard")
    dash = _ready(window, demo, "cpu-demo")
    try:
        qtbot.wait(50)
        assert dash.spec_notice.isVisible() and dash.spec_notice.text() == (
            "No speculative decoding in this profile: acceptance is not measured."
        )
        for key in dash.plots.spec_decode_plots():
            assert not _shown(dash.plots.widgets[key], window), key
        assert set(dash.plots.spec_decode_plots()) == {"acceptance", "length"}
        assert _shown(dash.plots.widgets["tokens"], window) and _shown(dash.plots.widgets["kv"], window)
        header = dash.header
        assert not _shown(header.values["acceptance_pct"], window)
        assert not _shown(header.values["mean_acceptance_length"], window)
        assert _shown(header.values["gen_tps"], window)
        # the GPU plots' reason names the window's field, not the profile's YAML key
        assert dash.gpu_notice.text() == (
            "GPU plots hidden: the profile requests no GPU (fill in GPUs in the Profile tab to watch one)"
        )
        grab(window, "dashboard-no-spec")
        # no placeholder times (00.100 …) under the plots before the first sample; times once data is there
        time_axis = dash.plots.widgets["kv"].getPlotItem().getAxis("bottom")
        assert not time_axis.style["showValues"]
        now = time.time()
        dash.plots.set_curve_data("kv_pct", np.array([now - 2.0, now]), np.array([10.0, 12.0]))
        dash.plots.set_x_range(now - 60.0, now)
        dash.plots.refresh()
        assert time_axis.style["showValues"] and not dash.plots.is_empty("kv")
    finally:
        dash.stop_watching()


def test_dashboard_of_a_profile_with_spec_decode_waits_for_acceptance(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    name = _ngram_demo(qtbot, window, demo)
    click_profile(window, name)
    click_view(window, "Dashboard")
    dash = _ready(window, demo, name)
    try:
        qtbot.wait(50)
        assert not dash.spec_notice.isVisible()
        for key in ("acceptance", "length"):
            assert dash.plots.widgets[key].isVisible() and dash.plots.is_empty(key)  # "No data yet"
        assert _shown(dash.header.values["acceptance_pct"], window)
        grab(window, "dashboard-spec-waiting")
    finally:
        dash.stop_watching()


def test_benchmark_acceptance_tab_follows_the_selected_profile(qtbot, demo, window) -> None:  # type: ignore[no-untyped-def]
    name = _ngram_demo(qtbot, window, demo)
    click_profile(window, "cpu-demo")
    click_view(window, "Benchmark")
    bench = window.bench_view
    click_page(bench.tabs, "Acceptance")
    panel = bench.acceptance
    assert panel.note.text() == NO_SPEC_DECODE and not panel.table.isVisible()
    qtbot.wait(200)  # the view's first layout
    grab(window, "bench-acceptance-no-spec")
    click_profile(window, name)
    assert panel.note.text() == NO_RESULT and panel.table.isVisible()
    click_profile(window, "cpu-demo")
    assert panel.note.text() == NO_SPEC_DECODE and not panel.table.isVisible()
