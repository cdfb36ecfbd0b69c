"""A stand-in ``vllm serve`` for launches that need a server process but no model: it answers
``/health`` and ``/v1/models`` on its ``--host``/``--port`` (as vLLM does, 200 with a model list) and,
when ``STANDIN_ENV_FILE`` is set, writes there the ``CUDA_VISIBLE_DEVICES`` it was started with, so a
test can see which GPUs the launch gave it."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = """
import http.server, os, sys
args = sys.argv[1:]
port, host = int(args[args.index("--port") + 1]), args[args.index("--host") + 1]
out = os.environ.get("STANDIN_ENV_FILE")
if out:
    with open(out, "a") as fh:
        fh.write(f"{os.getpid()} CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}\\n")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        body = b'{"object": "list", "data": [{"id": "tiny"}]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
print("serving", flush=True)
http.server.HTTPServer((host, port), H).serve_forever()
"""


def write_standin(folder: Path) -> Path:
    """An executable ``vllm`` in ``folder`` that runs :data:`SCRIPT` with this test's Python."""
    exe = folder / "vllm"
    exe.write_text(f"#!{sys.executable}\n{SCRIPT}")
    exe.chmod(0o755)
    return exe
