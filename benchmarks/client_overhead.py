"""Does the app's benchmark client cost throughput? Its wall TPS against a minimal stdlib client.

Both stream the same requests from the same server, interleaved (app, stdlib, app, stdlib, …) so that
drift in the server's speed hits both alike. The stdlib client is the least a client can do: one
``http.client`` connection, read until ``[DONE]``, take ``completion_tokens`` from the usage chunk.
Reported: mean wall TPS of each and the ratio app / stdlib (target ≥ 0.99).

    .venv/bin/python benchmarks/client_overhead.py --url http://127.0.0.1:8000 --model NAME [--runs 10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from llm_dyno.core.bench.client import BenchClient


def body(model: str, max_tokens: int, prompt: str) -> dict[str, object]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def stdlib_run(conn: http.client.HTTPConnection, payload: bytes) -> float:
    """Wall TPS of one request, measured the plainest way."""
    t0 = time.monotonic()
    conn.request("POST", "/v1/chat/completions", body=payload, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    tokens = 0
    for raw in resp:  # line by line
        line = raw.strip()
        if line == b"data: [DONE]":
            break
        if line.startswith(b"data: ") and b'"usage"' in line:
            usage = json.loads(line[6:]).get("usage") or {}
            tokens = usage.get("completion_tokens", tokens)
    wall = time.monotonic() - t0
    resp.read()  # drain to keep the connection reusable
    return tokens / wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--runs", type=int, default=10, help="runs per client and prompt")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    prompts = ["Write a detailed essay about attention.", "Write quicksort in Python."]
    parts = urlsplit(args.url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=600)
    app_tps: list[float] = []
    std_tps: list[float] = []
    with BenchClient(args.url) as client:
        for prompt in prompts:  # warm both connections and the server
            b = body(args.model, args.max_tokens, prompt)
            client.stream("/v1/chat/completions", b)
            stdlib_run(conn, json.dumps(b).encode())
        for i in range(args.runs):
            for prompt in prompts:
                b = body(args.model, args.max_tokens, prompt)
                payload = json.dumps(b).encode()
                first_app = i % 2 == 0  # alternate who goes first
                for who in ("app", "std") if first_app else ("std", "app"):
                    if who == "app":
                        out = client.stream("/v1/chat/completions", b)
                        app_tps.append(out.completion_tokens / out.wall_s)
                    else:
                        std_tps.append(stdlib_run(conn, payload))
    conn.close()
    app_mean, std_mean = statistics.fmean(app_tps), statistics.fmean(std_tps)
    print(f"runs per client: {len(app_tps)}  max_tokens {args.max_tokens}")
    print(f"app client    wall TPS mean {app_mean:8.1f}  median {statistics.median(app_tps):8.1f}")
    print(f"stdlib client wall TPS mean {std_mean:8.1f}  median {statistics.median(std_tps):8.1f}")
    print(
        f"ratio app/stdlib: mean {app_mean / std_mean:.3f}  median "
        f"{statistics.median(app_tps) / statistics.median(std_tps):.3f}  (target >= 0.99)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
