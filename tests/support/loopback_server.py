"""The one scaffold of the tests' fake OpenAI-style servers: HTTP/1.1 on 127.0.0.1 (a free port), a
thread per connection, stopped by ``with`` or by itself after ``lifetime_s`` even if a test forgets it.
A server says what it answers in :meth:`LoopbackServer._get` and :meth:`LoopbackServer._post`."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from typing import Self


class LoopbackServer:
    """``with Sub(...) as s: … s.url …``; :meth:`_alive` says whether an endless answer may go on."""

    def __init__(self, *, lifetime_s: float = 60.0) -> None:
        self.lifetime_s = lifetime_s
        self._stop = threading.Event()
        self._ends_at = 0.0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer._get(self)

            def do_POST(self) -> None:
                outer._post(self, self.rfile.read(int(self.headers.get("content-length") or 0)))

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime_s, self.stop)
        self._timer.daemon = True

    def __enter__(self) -> Self:
        self._ends_at = time.monotonic() + self.lifetime_s
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and end every answer in progress."""
        if not self._stop.is_set():
            self._stop.set()
            self._timer.cancel()
            self._httpd.shutdown()
            self._httpd.server_close()

    def _alive(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._ends_at

    @staticmethod
    def reply(
        h: http.server.BaseHTTPRequestHandler, status: int, body: bytes, ctype: str = "application/json"
    ) -> None:
        """A whole answer with its length (a client that has gone away is not an error here)."""
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(body)

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        raise NotImplementedError
