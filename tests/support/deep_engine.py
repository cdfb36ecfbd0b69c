"""A fake Docker engine (tests/support/fake_engine.py) whose ``/containers/json`` or ``/info`` answer is
a small body nested 20,000 deep (issue 29, class 1): far inside the size bound, past any parser's
stack."""

from __future__ import annotations

import re
from http.server import BaseHTTPRequestHandler

from tests.support.fake_engine import API, FakeEngine

DEEP_BODY = b"[" * 20_000 + b"]" * 20_000


class DeepEngine(FakeEngine):
    """``DeepEngine("/containers/json")``: that path answers :data:`DEEP_BODY`, the rest as
    :class:`FakeEngine` with an empty container list."""

    def __init__(self, deep_path: str) -> None:
        super().__init__("list")
        self.deep_path = deep_path

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        path = re.sub(r"^/v[0-9.]+", "", h.path.split("?", 1)[0])
        if path != self.deep_path:
            super()._answer(h)
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Api-Version", API)
        h.send_header("Content-Length", str(len(DEEP_BODY)))
        h.end_headers()
        h.wfile.write(DEEP_BODY)
