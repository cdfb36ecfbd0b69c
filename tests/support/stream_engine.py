"""A fake Docker engine (tests/support/fake_engine.py) whose streamed answers are hostile (issue 29,
class 9, the streams): a container's log, an exec's output and a pull's progress are one endless line
(a multiplexed frame whose header claims 4 GiB, then bytes without a newline), or a byte every
``drip_s`` that never makes a line. Everything else is what the engine answers for the containers it
is given: inspect, wait (after ``wait_s``), remove, exec create and inspect, image inspect (404: the
image must be pulled).

``shape``: ``"endless-line"`` or ``"drip"``. An endless answer stops after ``endless_bytes`` (then the
stream ends, as a container's log does when it exits) or when the client hangs up; :attr:`sent` counts
what was written, so a test can tell how much the client was sent while its memory stayed bounded.
"""

from __future__ import annotations

import contextlib
import re
import struct
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler

from tests.support.fake_engine import API, FakeEngine

_PIECE = b"x" * (256 * 1024)
EXEC_ID = "e" * 64


class StreamEngine(FakeEngine):
    """``with StreamEngine("endless-line", containers={"own": labels}) as engine: … engine.url …``."""

    def __init__(
        self,
        shape: str,
        *,
        containers: Mapping[str, Mapping[str, str]] | None = None,
        engine_id: str = "FAKE:ENGINE:B",
        drip_s: float = 1.0,
        wait_s: float = 60.0,
        endless_bytes: int = 1 << 40,
    ) -> None:
        if shape not in ("endless-line", "drip"):
            raise ValueError(f"unknown shape {shape!r}")
        super().__init__("list", engine_id=engine_id, containers=containers, drip_s=drip_s)
        self.stream_shape = shape
        self.wait_s = wait_s
        self.endless_bytes = endless_bytes
        self.sent = 0
        self.streams_ended = 0  # streams the client hung up on, or that ended here
        self.log_ended = threading.Event()  # a followed log has ended: the container then exits

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        path = re.sub(r"^/v[0-9.]+", "", h.path.split("?", 1)[0])
        query = h.path.split("?", 1)[1] if "?" in h.path else ""
        if re.fullmatch(r"/containers/[^/]+/logs", path):
            if "follow=1" in query or "follow=True" in query:
                self._stream(h, multiplexed=True)
            else:  # the log kept when the container is gone: a short one
                self._chunked(h, [struct.pack(">BxxxL", 1, 6) + b"saved\n"])
        elif re.fullmatch(r"/containers/[^/]+/wait", path):
            ends = time.monotonic() + self.wait_s  # the container exits when its log has ended
            while not self._stop.wait(0.1) and not self.log_ended.is_set() and time.monotonic() < ends:
                pass
            self._json(h, {"StatusCode": 0})
        elif re.fullmatch(r"/containers/[^/]+", path) and h.command == "DELETE":
            h.send_response(204)
            h.send_header("Api-Version", API)
            h.end_headers()
        elif re.fullmatch(r"/containers/[^/]+/exec", path):
            length = int(h.headers.get("content-length") or 0)
            h.rfile.read(length)
            self._json(h, {"Id": EXEC_ID}, 201)
        elif path == f"/exec/{EXEC_ID}/start":
            length = int(h.headers.get("content-length") or 0)
            h.rfile.read(length)
            self._upgraded(h)
        elif path == f"/exec/{EXEC_ID}/json":
            self._json(h, {"ExitCode": 0, "Running": False})
        elif path == "/images/create":
            self._stream(h, multiplexed=False)
        elif re.fullmatch(r"/images/.+/json", path):
            self._json(h, {"message": "No such image"}, 404)
        else:
            super()._answer(h)

    def _chunked(self, h: BaseHTTPRequestHandler, chunks: list[bytes]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/vnd.docker.raw-stream")
        h.send_header("Api-Version", API)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for chunk in chunks:
            h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        h.wfile.write(b"0\r\n\r\n")

    def _body(self, send: Callable[[bytes], None], *, multiplexed: bool) -> None:
        """The hostile payload, each piece through ``send`` (raises OSError when the client left)."""
        if multiplexed:
            send(struct.pack(">BxxxL", 1, 0xFFFFFFFF))
        if self.stream_shape == "drip":
            while not self._stop.wait(self.drip_s):
                send(b"x")
                self.sent += 1
            return
        while not self._stop.is_set() and self.sent < self.endless_bytes:
            send(_PIECE)
            self.sent += len(_PIECE)

    def _stream(self, h: BaseHTTPRequestHandler, *, multiplexed: bool) -> None:
        h.send_response(200)
        h.send_header(
            "Content-Type", "application/vnd.docker.raw-stream" if multiplexed else "application/json"
        )
        h.send_header("Api-Version", API)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def write(data: bytes) -> None:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

        with contextlib.suppress(OSError):
            self._body(write, multiplexed=multiplexed)
            h.wfile.write(b"0\r\n\r\n")
        self.streams_ended += 1
        if multiplexed:
            self.log_ended.set()
        h.close_connection = True

    def _upgraded(self, h: BaseHTTPRequestHandler) -> None:
        """``/exec/…/start`` as the engine answers it: 101, then the raw stream on the socket."""
        h.send_response(101, "UPGRADED")
        h.send_header("Content-Type", "application/vnd.docker.raw-stream")
        h.send_header("Connection", "Upgrade")
        h.send_header("Upgrade", "tcp")
        h.send_header("Api-Version", API)
        h.end_headers()

        def write(data: bytes) -> None:
            h.wfile.write(data)
            h.wfile.flush()

        with contextlib.suppress(OSError):
            self._body(write, multiplexed=True)
        self.streams_ended += 1
        h.close_connection = True
