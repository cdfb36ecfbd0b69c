"""A fake Docker engine on tcp://127.0.0.1, made by a test: it answers ``/_ping``, ``/version`` and
``/info`` as an engine does, and ``/containers/json`` in the way the test asks (endless, dripping, or
the containers it is given), and records every request. Answers are shaped as Docker Engine API 1.43
documents them (only the fields docker-py and the app read)."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API = "1.43"


class FakeEngine:
    """``shape``: ``"endless"`` (``/containers/json`` never ends), ``"drip"`` (a byte every
    ``drip_s``), ``"drip-headers"`` (the status line dripped), ``"cut"`` (the answer
    broken off), or ``"list"`` (``containers``: name →
    labels, each a running container). ``engine_id``: the ID ``/info`` claims."""

    def __init__(
        self,
        shape: str,
        *,
        engine_id: str = "FAKE:ENGINE:B",
        containers: Mapping[str, Mapping[str, str]] | None = None,
        drip_s: float = 2.0,
    ) -> None:
        self.shape = shape
        self.engine_id = engine_id
        self.containers = dict(containers or {})
        self.drip_s = drip_s
        self.requests: list[str] = []
        self._stop = threading.Event()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                engine.requests.append(self.path)
                engine._answer(self)

            do_POST = do_GET
            do_HEAD = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"tcp://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeEngine:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def _json(self, h: BaseHTTPRequestHandler, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Api-Version", API)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _container(self, name: str, labels: Mapping[str, str]) -> dict[str, Any]:
        cid = (name.encode().hex() * 8)[:64]
        return {
            "Id": cid,
            "Name": f"/{name}",
            "Names": [f"/{name}"],
            "Image": "tiny",
            "State": {"Status": "running", "Running": True},
            "Config": {"Labels": dict(labels), "Image": "tiny", "Tty": False},
            "Labels": dict(labels),
            "NetworkSettings": {"Ports": {}},
            "HostConfig": {"PortBindings": {}},
        }

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        path = re.sub(r"^/v[0-9.]+", "", path)
        if path == "/_ping":
            h.send_response(200)
            h.send_header("Api-Version", API)
            h.send_header("Content-Length", "2")
            h.end_headers()
            h.wfile.write(b"OK")
        elif path == "/version":
            self._json(h, {"ApiVersion": API, "MinAPIVersion": "1.12", "Version": "24.0.7", "Os": "linux"})
        elif path == "/info":
            self._json(h, {"ID": self.engine_id, "Name": "fake", "ServerVersion": "24.0.7"})
        elif path == "/containers/json":
            with contextlib.suppress(OSError):  # the client hung up: what a bounded client does
                self._list(h)
        elif m := re.fullmatch(r"/containers/([^/]+)/json", path):
            for name, labels in self.containers.items():
                found = self._container(name, labels)
                if m.group(1) in (found["Id"], name):
                    self._json(h, found)
                    return
            self._json(h, {"message": "No such container"}, 404)
        else:
            self._json(h, {"message": f"page not found: {path}"}, 404)

    def _list(self, h: BaseHTTPRequestHandler) -> None:
        if self.shape == "list":
            self._json(h, [self._container(n, labels) for n, labels in self.containers.items()])
            return
        if self.shape == "drip-headers":
            for byte in b"HTTP/1.1 200 OK\r\n":
                if self._stop.wait(self.drip_s):
                    return
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if self.shape == "cut":  # promises 100,000 bytes, sends 3, hangs up
            h.send_header("Content-Length", "100000")
            h.end_headers()
            h.wfile.write(b"[{}")
            h.wfile.flush()
            h.close_connection = True
            return
        if self.shape == "drip":
            h.send_header("Content-Length", "100000")
            h.end_headers()
            while not self._stop.wait(self.drip_s):
                h.wfile.write(b"[")
                h.wfile.flush()
            return
        h.send_header("Transfer-Encoding", "chunked")  # endless
        h.end_headers()
        item = json.dumps(self._container("x", {"llm-dyno.managed": "1"})).encode() + b","
        chunk = b"[" + item * 2000
        started = time.monotonic()
        while not self._stop.is_set() and time.monotonic() - started < 120:
            h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
