"""A fake Docker engine on tcp://127.0.0.1 that speaks a chosen Engine API version (``/version``'s
``ApiVersion`` and the ``Api-Version`` header) and records the body of every ``POST /containers/create``:
what a launch asks of an engine newer than the one on this machine (Docker Engine 28, API 1.48, for an
image volume). It knows every image, lists no containers, and refuses to start the created container
(so the launch ends there, and removes it); answers are shaped as the Engine API documents them (only
the fields docker-py and the app read)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED_ID = "c0ffee" * 10 + "c0ff"  # 64 hex digits, as an engine's container IDs


class CreateRecordingEngine:
    """``api``: the Engine API version it claims. ``created``: the JSON bodies of the creates it got;
    ``requests``: every method and path."""

    def __init__(self, api: str = "1.48") -> None:
        self.api = api
        self.created: list[dict[str, Any]] = []
        self.requests: list[str] = []
        self.removed = False
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                engine.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                engine._answer(self, body)

            do_GET = do_POST = do_DELETE = do_HEAD = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"tcp://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> CreateRecordingEngine:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _send(self, h: BaseHTTPRequestHandler, status: int, body: Any = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Api-Version", self.api)
        if body is not None:
            h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _answer(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        path = re.sub(r"^/v[0-9.]+", "", h.path.split("?", 1)[0])
        if path == "/_ping":
            h.send_response(200)
            h.send_header("Api-Version", self.api)
            h.send_header("Content-Length", "2")
            h.end_headers()
            h.wfile.write(b"OK")
        elif path == "/version":
            version = {"ApiVersion": self.api, "MinAPIVersion": "1.24", "Version": "28.0.0", "Os": "linux"}
            self._send(h, 200, version)
        elif path == "/info":
            self._send(h, 200, {"ID": "FAKE:ENGINE:API", "Name": "fake", "ServerVersion": "28.0.0"})
        elif path == "/containers/json":
            self._send(h, 200, [])
        elif m := re.fullmatch(r"/images/(.+)/json", path):
            self._send(h, 200, {"Id": "sha256:" + "ab" * 32, "RepoTags": [m.group(1)]})
        elif path == "/containers/create" and h.command == "POST":
            self.created.append(json.loads(body))
            self._send(h, 201, {"Id": CREATED_ID, "Warnings": []})
        elif path == f"/containers/{CREATED_ID}/json":
            made = self.created[-1] if self.created else {}
            self._send(
                h,
                200,
                {
                    "Id": CREATED_ID,
                    "Name": "/created",
                    "State": {"Status": "created", "Running": False},
                    "Config": {"Labels": made.get("Labels") or {}, "Image": made.get("Image")},
                    "HostConfig": made.get("HostConfig") or {},
                    "NetworkSettings": {"Ports": {}},
                },
            )
        elif path == f"/containers/{CREATED_ID}/start":
            self._send(h, 500, {"message": "the fake engine records the create and starts nothing"})
        elif path == f"/containers/{CREATED_ID}" and h.command == "DELETE":
            self.removed = True
            self._send(h, 204)
        else:
            self._send(h, 404, {"message": f"page not found: {h.command} {path}"})
