"""The load runner's bounds against real local HTTP servers: a level past its deadline ends (its streams
closed, no thread left), a server that stops answering fails the level with the reason, and a recorded
vLLM stream is accounted for request by request."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from llm_dyno.core.bench.load import LoadLevel, LoadResult
from llm_dyno.core.bench.load_runner import LevelFinished, LoadPlan, LoadRunner
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.endpoint import url_endpoint
from tests.core.bench.replay import ReplayServer, fixture

SUITE = suite_from_yaml(
    "name: s\nwarmups: 0\nruns: 1\ntimeout_s: 60\nprompts:\n"
    "  - {name: a, max_tokens: 64, messages: [{role: user, content: hi}]}\n"
)


@pytest.fixture
def stalling_url() -> Iterator[str]:
    """A server that starts every stream with one chunk and then says nothing more."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n')
            self.wfile.flush()
            time.sleep(30)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _load_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("load-")]


def test_a_level_past_its_deadline_ends_and_the_run_stops(stalling_url: str) -> None:
    plan = LoadPlan((LoadLevel(concurrency=2), LoadLevel(concurrency=4)), 4, level_timeout_s=1.0)
    t0 = time.monotonic()
    result = LoadRunner(url_endpoint(stalling_url, "tiny"), SUITE, plan).run(
        LoadResult(suite="s", url=stalling_url, model="tiny")
    )
    assert time.monotonic() - t0 < 10
    assert len(result.levels) == 1 and result.levels[0].error is not None
    assert "did not finish within 1 s" in result.levels[0].error and result.error is not None
    assert result.error.startswith("concurrency 2:")
    assert _load_threads() == []


def test_a_cancel_keeps_finished_levels_only(stalling_url: str) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    plan = LoadPlan((LoadLevel(concurrency=2),), 2)
    result = LoadRunner(url_endpoint(stalling_url, "tiny"), SUITE, plan, cancel=cancel).run(
        LoadResult(suite="s", url="", model="tiny")
    )
    assert result.cancelled and result.levels == () and _load_threads() == []


def test_recorded_streams_are_accounted_and_a_dead_server_fails_the_level() -> None:
    events: list[object] = []
    with ReplayServer(fixture("chat_length.sse")) as server:
        plan = LoadPlan((LoadLevel(concurrency=3),), 6)
        result = LoadRunner(url_endpoint(server.url, "tiny"), SUITE, plan, emit=events.append).run(
            LoadResult(suite="s", url=server.url, model="tiny")
        )
    (lv,) = result.levels
    assert result.error is None and len(lv.ok) == 6 and server.posts == 6
    per_request = {r.output_tokens for r in lv.ok}
    assert len(per_request) == 1 and lv.output_tokens == 6 * per_request.pop()
    assert lv.generation_tokens_delta is None  # no /metrics on this server: not claimed
    assert any(isinstance(e, LevelFinished) for e in events)
    with ReplayServer(fixture("chat_length.sse"), die_after=0) as dead:
        result = LoadRunner(url_endpoint(dead.url, "tiny"), SUITE, plan).run(
            LoadResult(suite="s", url=dead.url, model="tiny")
        )
    assert result.error is not None and "every request failed" in result.error
    assert len(result.levels) == 1 and result.levels[0].ok == ()
