"""Test helpers: recorded SSE fixtures, an httpx transport and a real HTTP server that replay them."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

SSE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "sse"


def fixture(name: str) -> bytes:
    """A recorded stream (its leading ``:`` comment lines are the recording note; valid SSE)."""
    return (SSE_DIR / name).read_bytes()


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


class _Stream(httpx.SyncByteStream):
    def __init__(self, parts: list[bytes], fail_after: bool) -> None:
        self.parts = parts
        self.fail_after = fail_after

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts
        if self.fail_after:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


def sse_transport(
    body: bytes,
    *,
    chunk: int = 7,
    status: int = 200,
    fail_after: bool = False,
    metrics: Callable[[], str] | None = None,
) -> httpx.MockTransport:
    """A transport answering every POST with ``body`` split into ``chunk``-byte pieces."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics" and metrics is not None:
            return httpx.Response(200, text=metrics())
        if request.url.path == "/version":
            return httpx.Response(200, json={"version": "0.32.0"})
        return httpx.Response(
            status,
            stream=_Stream(list(chunked(body, chunk)), fail_after),
            headers={"content-type": "text/event-stream"},
        )

    return httpx.MockTransport(handler)


class ReplayServer:
    """A real HTTP server on 127.0.0.1 that answers chat/completions POSTs with a recorded stream.

    ``die_after`` requests, it closes connections without answering (a server that stopped).
    """

    def __init__(self, body: bytes, die_after: int | None = None) -> None:
        self.body = body
        self.die_after = die_after
        self.posts = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                payload = b'{"version": "0.32.0"}' if self.path == "/version" else b""
                self.send_response(200 if payload else 404)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts += 1
                if outer.die_after is not None and outer.posts > outer.die_after:
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
