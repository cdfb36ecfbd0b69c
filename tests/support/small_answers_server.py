"""Hostile answers far inside every size bound (issue 29, classes 1 and 3): JSON nested deeper than any
parser's stack, a stream that sends ``[DONE]`` and then holds the connection open, lone surrogates.

Everything else (``/health``, ``/metrics``, the good stream) is what a recorded vLLM answers, so the
hostile part is the only thing that differs. Loopback only; stops by itself after ``lifetime_s``.
"""

from __future__ import annotations

import http.server
import time

from tests.support.hostile_server import GOOD_STREAM
from tests.support.loopback_server import LoopbackServer

DEEP = 20_000  # nesting depth of the deep bodies: far past Python's recursion limit, only 40 KB
STREAM_DEEP = 50_000

DEEP_BODY = b"[" * DEEP + b"]" * DEEP
_DONE = b"data: [DONE]\n\n"
_USAGE = b'"usage":{"prompt_tokens":20,"total_tokens":44,"completion_tokens":24}'

METRICS = (
    b"# TYPE vllm:num_requests_running gauge\n"
    b'vllm:num_requests_running{model_name="tiny",engine="0"} 0.0\n'
    b"# TYPE vllm:generation_tokens_total counter\n"
    b'vllm:generation_tokens_total{model_name="tiny",engine="0"} 100.0\n'
)

# shape -> where the hostile part is
SHAPES = (
    "deep_event",  # one streamed event: 50,000 nested arrays
    "deep_error",  # POST answers HTTP 500 with a body nested 20,000 deep
    "deep_models",  # /v1/models nested 20,000 deep
    "deep_version",  # /version nested 20,000 deep
    "done_then_hold",  # the good stream, [DONE], then the connection held open (chunked, no end)
    "surrogate",  # the good stream with a lone "\ud800" in content and in finish_reason
)


class SmallAnswersServer(LoopbackServer):
    """``with SmallAnswersServer("deep_models") as s: … s.url …``."""

    def __init__(self, shape: str, *, lifetime_s: float = 60.0) -> None:
        if shape not in SHAPES:
            raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
        self.shape = shape
        self.posts = 0
        super().__init__(lifetime_s=lifetime_s)

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if path == "/v1/models":
            good = b'{"object": "list", "data": [{"id": "tiny", "object": "model"}]}'
            self.reply(h, 200, DEEP_BODY if self.shape == "deep_models" else good, "application/json")
        elif path == "/version":
            good = b'{"version": "0.32.0"}'
            self.reply(h, 200, DEEP_BODY if self.shape == "deep_version" else good, "application/json")
        elif path == "/metrics":
            self.reply(h, 200, METRICS, "text/plain")
        elif path == "/health":
            self.reply(h, 200, b"", "application/json")
        else:
            self.reply(h, 404, b'{"detail": "Not Found"}', "application/json")

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        self.posts += 1
        if self.shape == "deep_error":
            self.reply(h, 500, DEEP_BODY, "application/json")
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for part in self._stream():
                h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                h.wfile.flush()
            if self.shape == "done_then_hold":
                # the answer is complete; the body is not: hold it open (no terminating chunk)
                ends = time.monotonic() + self.lifetime_s
                while not self._stop.wait(0.2) and time.monotonic() < ends:
                    pass
                return
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client closed: what it should do after [DONE]
        h.close_connection = True

    def _stream(self) -> list[bytes]:
        if self.shape == "deep_event":
            deep = b"[" * STREAM_DEEP + b"]" * STREAM_DEEP
            return [GOOD_STREAM.split(b"\n\n", 2)[0] + b"\n\n", b"data: " + deep + b"\n\n"]
        if self.shape == "surrogate":
            body = GOOD_STREAM.replace(b'"content":"ant"', b'"content":"an\\ud800t"', 1)
            body = body.replace(b'"finish_reason":"length"', b'"finish_reason":"len\\ud800gth"')
            return [body]
        assert GOOD_STREAM.endswith(_DONE) and _USAGE in GOOD_STREAM
        return [GOOD_STREAM]
