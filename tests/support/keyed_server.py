"""A vLLM stand-in on loopback that demands a key: ``/health``, ``/v1/models`` (``tiny``), ``/metrics``
and a streamed chat answer (the recorded ``chat_length.sse``), each answering 401 unless the request
carries ``Authorization: Bearer <key>``. It records every Authorization header it was sent, so a test
can tell that the key reached it, and when."""

from __future__ import annotations

import contextlib
import http.server

from tests.support.hostile_server import GOOD_STREAM
from tests.support.loopback_server import LoopbackServer
from tests.support.small_answers_server import METRICS

MODELS = b'{"object": "list", "data": [{"id": "tiny", "object": "model"}]}'


class KeyedServer(LoopbackServer):
    """``with KeyedServer("sk-…") as s: … s.url … s.authorizations``."""

    def __init__(self, key: str, *, lifetime_s: float = 60.0) -> None:
        self.key = key
        self.authorizations: list[str | None] = []
        self.posts = 0
        super().__init__(lifetime_s=lifetime_s)

    def _allowed(self, h: http.server.BaseHTTPRequestHandler) -> bool:
        said = h.headers.get("Authorization")
        self.authorizations.append(said)
        if said == f"Bearer {self.key}":
            return True
        self.reply(h, 401, b'{"error": "Unauthorized"}', "application/json")
        return False

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        if not self._allowed(h):
            return
        path = h.path.split("?")[0]
        answers = {"/v1/models": (MODELS, "application/json"), "/metrics": (METRICS, "text/plain")}
        answers["/health"] = (b"", "application/json")
        answers["/version"] = (b'{"version": "0.32.0"}', "application/json")
        body, ctype = answers.get(path, (b'{"detail": "Not Found"}', "application/json"))
        self.reply(h, 200 if path in answers else 404, body, ctype)

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        if not self._allowed(h):
            return
        self.posts += 1
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Content-Length", str(len(GOOD_STREAM)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(GOOD_STREAM)
        h.close_connection = True
