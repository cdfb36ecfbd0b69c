"""A recorded vLLM stream (tests/fixtures/sse/chat_length.sse) held at a gate, so that jobs overlap.

Every answer but the stream is a recorded vLLM's (from :class:`SmallAnswersServer`). A POST sends the
stream's first event, then waits until ``release`` is set (or the server stops), then sends the rest one
event every ``delay_s``. ``in_flight`` / ``max_in_flight`` count the streams being answered at once, so a
test sees whether two jobs ran against this server together. Loopback only; stops by itself.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
import time

from tests.support.hostile_server import GOOD_STREAM
from tests.support.loopback_server import LoopbackServer
from tests.support.small_answers_server import SmallAnswersServer

EVENTS = [e + b"\n\n" for e in GOOD_STREAM.split(b"\n\n") if e.strip()]


class GatedStreamServer(SmallAnswersServer):
    """``with GatedStreamServer() as s: … s.url …; s.release.set()``."""

    def __init__(self, *, delay_s: float = 0.01, lifetime_s: float = 60.0) -> None:
        LoopbackServer.__init__(self, lifetime_s=lifetime_s)
        self.shape = "gated"  # its GETs are SmallAnswersServer's good ones
        self.posts = 0
        self.delay_s = delay_s
        self.release = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        with self._lock:
            self.posts += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            with contextlib.suppress(OSError):  # the client closed: a cancel
                for i, event in enumerate(EVENTS):
                    if i == 1:
                        while not self.release.wait(0.05) and self._alive():
                            pass
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    h.wfile.flush()
                    time.sleep(self.delay_s)
                h.wfile.write(b"0\r\n\r\n")
            h.close_connection = True
        finally:
            with self._lock:
                self.in_flight -= 1
