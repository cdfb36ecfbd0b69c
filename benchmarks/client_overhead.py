"""Does the app's benchmark client cost throughput? Its wall TPS against a minimal stdlib client.

Both stream the same requests from the same server, interleaved (the order rotates each round) so
that drift in the server's speed hits both alike. The stdlib client is the least a client can do:
one ``http.client`` connection, read until ``[DONE]``, take ``completion_tokens`` from the usage
chunk. Both clocks run from just before the request is sent to the arrival of ``[DONE]``.
Reported: mean and median wall TPS of each, the ratio app / stdlib (target ≥ 0.99), and the median
of the per-round ratios (each round's runs are seconds apart, so server drift cancels best there).

``--compare-client FILE`` adds a second app client loaded from another ``client.py`` (e.g. the one
before a change, copied out of git), interleaved in the same rounds: before and after in one run.

    .venv/bin/python benchmarks/client_overhead.py --url http://127.0.0.1:8000 --model NAME [--runs 10]
        [--compare-client /tmp/client_before.py] [--out benchmarks/results/client_overhead.txt]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from llm_dyno.core.bench.client import BenchClient
from llm_dyno.core.endpoint import url_endpoint

PATH = "/v1/chat/completions"


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
    for attempt in (1, 2):
        t0 = time.monotonic()
        try:
            conn.request("POST", PATH, body=payload, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # the server closed the idle keep-alive connection (uvicorn: after 5 s); httpx reconnects
            # by itself, so this one does too, and restarts its clock after connecting
            if attempt == 2:
                raise
            conn.close()
            conn.connect()
            continue
        break
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


def load_client(path: str) -> Any:
    """The ``BenchClient`` class of another copy of ``client.py`` (it imports the installed package)."""
    spec = importlib.util.spec_from_file_location("compared_client", path)
    if spec is None or spec.loader is None:
        sys.exit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.BenchClient


def summary(name: str, tps: list[float], ref: list[float], label: str) -> str:
    mean, med = statistics.fmean(tps), statistics.median(tps)
    paired = statistics.median(a / b for a, b in zip(tps, ref, strict=True))
    return (
        f"{name:<14} wall TPS mean {mean:8.1f}  median {med:8.1f}   {label}: mean "
        f"{mean / statistics.fmean(ref):.3f}  median {med / statistics.median(ref):.3f}  "
        f"paired median {paired:.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--runs", type=int, default=10, help="runs per client and prompt")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--compare-client", help="another client.py to measure in the same rounds")
    ap.add_argument("--out", type=Path, help="also write the report here, with a header")
    args = ap.parse_args()
    prompts = ["Write a detailed essay about attention.", "Write quicksort in Python."]
    parts = urlsplit(args.url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=600)
    load_before = os.getloadavg()
    clients: dict[str, Any] = {"app": BenchClient(url_endpoint(args.url, ""))}
    if args.compare_client:
        clients["compared app"] = load_client(args.compare_client)(args.url)
    tps: dict[str, list[float]] = {name: [] for name in (*clients, "stdlib")}

    def runner(name: str, b: dict[str, object], payload: bytes) -> Callable[[], float]:
        if name == "stdlib":
            return lambda: stdlib_run(conn, payload)

        def run() -> float:
            out = clients[name].stream(PATH, b)
            return float(out.completion_tokens / out.wall_s)

        return run

    names = list(tps)
    for prompt in prompts:  # warm every connection and the server
        b = body(args.model, args.max_tokens, prompt)
        for name in names:
            runner(name, b, json.dumps(b).encode())()
    for i in range(args.runs):
        for prompt in prompts:
            b = body(args.model, args.max_tokens, prompt)
            payload = json.dumps(b).encode()
            k = i % len(names)
            for name in names[k:] + names[:k]:  # rotate who goes first
                tps[name].append(runner(name, b, payload)())
    conn.close()
    for c in clients.values():
        c.close()
    load_after = os.getloadavg()

    report = io.StringIO()
    with redirect_stdout(report):
        print(f"runs per client: {len(tps['stdlib'])}  max_tokens {args.max_tokens}  model {args.model}")
        for name in clients:
            print(summary(name, tps[name], tps["stdlib"], "ratio to stdlib"))
        std = tps["stdlib"]
        mean, med = statistics.fmean(std), statistics.median(std)
        print(f"{'stdlib':<14} wall TPS mean {mean:8.1f}  median {med:8.1f}")
        print("target: app / stdlib >= 0.99")
    text = report.getvalue()
    print(text, end="")
    if args.out is not None:
        fmt = ", ".join(f"{x:.2f}" for x in load_before), ", ".join(f"{x:.2f}" for x in load_after)
        header = (
            f"# {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}\n"
            f"# command: {' '.join([Path(sys.executable).name, *sys.argv])}\n"
            f"# load average (1, 5, 15 min) before: {fmt[0]}; after: {fmt[1]}; CPUs: {os.cpu_count()}\n"
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(header + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
