"""A server whose every answer is JSON nested 20,000 deep (issue 29, class 1): ``/metrics``,
``/version``, ``/v1/models``, ``/health`` and every POST alike, each only 40 KB, far inside every size
bound. What ``diagnose --url`` and ``watch --url`` meet when the URL is not a vLLM at all but
something that answers JSON no parser's stack holds. Loopback only; stops by itself after
``lifetime_s``."""

from __future__ import annotations

import http.server

from tests.support.loopback_server import LoopbackServer
from tests.support.small_answers_server import DEEP_BODY


class DeepJSONServer(LoopbackServer):
    """``with DeepJSONServer() as s: … s.url …``; :attr:`paths` lists what was asked."""

    def __init__(self, *, lifetime_s: float = 60.0) -> None:
        self.paths: list[str] = []
        super().__init__(lifetime_s=lifetime_s)

    def _deep(self, h: http.server.BaseHTTPRequestHandler) -> None:
        self.paths.append(h.path.split("?")[0])
        self.reply(h, 200, DEEP_BODY)

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        self._deep(h)

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        self._deep(h)
