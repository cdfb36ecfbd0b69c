"""A minimal Docker registry (HTTP API v2, read-only) serving one image, for real ``docker pull`` tests.

The image is an existing local image (``docker save``) with one extra layer of incompressible bytes,
so that a pull has a size worth reporting progress for. Blobs can be served slowly (``bytes_per_s``)
to leave time for a stop in the middle of a pull. The engine reaches it at ``127.0.0.1:PORT``, which
Docker treats as an insecure (plain HTTP) registry by default.

    with TestRegistry(client, "llm-dyno-test/tiny:latest", "llm-dyno-test/pulled", pad_mb=6) as reg:
        reg.reference  # "127.0.0.1:PORT/llm-dyno-test/pulled:1"
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import os
import tarfile
import threading
import time
from typing import Any

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_TYPE = "application/vnd.docker.container.image.v1+json"
LAYER_TYPE = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _pad_layer(megabytes: int) -> bytes:
    """An uncompressed layer tar holding ``/pad.bin`` of random (incompressible) bytes."""
    data = os.urandom(megabytes * 1024 * 1024)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("pad.bin")
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def image_blobs(client: Any, source: str, pad_mb: int) -> tuple[bytes, dict[str, bytes]]:
    """The manifest and blobs (by digest) of ``source`` plus a ``pad_mb`` MiB layer."""
    saved = b"".join(client.images.get(source).save(named=True))
    with tarfile.open(fileobj=io.BytesIO(saved)) as tar:

        def read(name: str) -> bytes:
            member = tar.extractfile(name)
            assert member is not None, name
            return member.read()

        entry = json.loads(read("manifest.json"))[0]
        config = json.loads(read(entry["Config"]))
        layers = [read(name) for name in entry["Layers"]]
    layers.append(_pad_layer(pad_mb))
    config["rootfs"]["diff_ids"].append(_digest(layers[-1]))
    config.setdefault("history", []).append({"created_by": "llm-dyno test registry: padding"})
    config_bytes = json.dumps(config).encode()
    blobs = {_digest(config_bytes): config_bytes}
    manifest_layers = []
    for layer in layers:
        packed = gzip.compress(layer, compresslevel=1)
        blobs[_digest(packed)] = packed
        manifest_layers.append({"mediaType": LAYER_TYPE, "size": len(packed), "digest": _digest(packed)})
    manifest = {
        "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "size": len(config_bytes), "digest": _digest(config_bytes)},
        "layers": manifest_layers,
    }  # fmt: skip
    return json.dumps(manifest).encode(), blobs


class TestRegistry:
    """Serves ``source`` as ``repository:tag`` on a free local port until closed."""

    __test__ = False  # not a pytest test class

    def __init__(
        self, client: Any, source: str, repository: str, *, tag: str = "1", pad_mb: int = 6,
        bytes_per_s: float | None = None,
    ) -> None:  # fmt: skip
        self.manifest, self.blobs = image_blobs(client, source, pad_mb)
        self.repository, self.tag, self.bytes_per_s = repository, tag, bytes_per_s
        self.requests: list[str] = []
        self.aborted = threading.Event()  # a client closed a blob download before its end
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.reference = f"127.0.0.1:{self.port}/{repository}:{tag}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: object) -> None:
                pass

            def _send(self, code: int, body: bytes, content_type: str, extra: dict[str, str]) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Docker-Distribution-API-Version", "registry/2.0")
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                if self.command == "GET":
                    self._write(body)

            def _write(self, body: bytes) -> None:
                rate = registry.bytes_per_s
                chunk = 64 * 1024
                try:
                    for i in range(0, len(body), chunk):
                        self.wfile.write(body[i : i + chunk])
                        if rate:
                            time.sleep(chunk / rate)
                except (BrokenPipeError, ConnectionResetError):
                    registry.aborted.set()

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                registry.requests.append(f"{self.command} {self.path}")
                prefix = f"/v2/{registry.repository}/"
                manifest_digest = _digest(registry.manifest)
                blob = self.path.rsplit("/", 1)[1] if self.path.startswith(prefix + "blobs/") else ""
                if self.path in ("/v2/", "/v2"):
                    self._send(200, b"{}", "application/json", {})
                elif self.path.removeprefix(prefix + "manifests/") in (registry.tag, manifest_digest):
                    headers = {"Docker-Content-Digest": manifest_digest}
                    self._send(200, registry.manifest, MANIFEST_TYPE, headers)
                elif blob in registry.blobs:
                    headers = {"Docker-Content-Digest": blob}
                    self._send(200, registry.blobs[blob], "application/octet-stream", headers)
                else:
                    self._send(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', "application/json", {})

        return Handler

    def __enter__(self) -> TestRegistry:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
