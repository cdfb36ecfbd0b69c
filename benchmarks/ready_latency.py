"""How long after /health first answers 200 does a process-backend handle report READY? (target < 0.5 s)

An independent poller hits ``/health`` every 20 ms and records when it first answers 200; the
handle's status subscription records when READY was published. Prints both and the difference.

    .venv/bin/python benchmarks/ready_latency.py --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import httpx
from _common import cpu_profile, tiny_model, workspace

from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.process_backend import ProcessRuntime

TARGET_S = 0.5


def health_watch(url: str, stop: threading.Event, out: list[float]) -> None:
    """Record the first time /health answers 200 (polls every 20 ms)."""
    with httpx.Client(timeout=1.0, trust_env=False) as client:
        while not stop.is_set():
            try:
                if client.get(f"{url}/health").status_code == 200:
                    out.append(time.time())
                    return
            except httpx.HTTPError:
                pass
            stop.wait(0.02)


def one_run(runtime: ProcessRuntime, profile_name: str, model: object, folder: object) -> float | None:
    plan = runtime.plan(cpu_profile(profile_name, model, folder))  # type: ignore[arg-type]
    ready_at: list[float] = []
    health_at: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=health_watch, args=(plan.base_url, stop, health_at), daemon=True)
    watcher.start()
    handle = runtime.launch(plan)

    def on_status(status: ServerStatus) -> None:
        if status.state is ServerState.READY:
            ready_at.append(time.time())

    handle.subscribe(on_status)
    status = handle.wait_ready(300)
    watcher.join(3)  # its request may still be in flight when READY is published
    stop.set()
    watcher.join(5)
    handle.stop(30)
    if status.state is not ServerState.READY or not health_at or not ready_at:
        print(f"  not ready: {status.state.value} {status.detail}")
        return None
    delta = ready_at[0] - health_at[0]
    print(f"  /health first 200 (20 ms poller) -> READY published: {delta:+.3f} s")
    return delta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", help="model folder (default: build a tiny one)")
    parser.add_argument("--workdir", help="scratch folder (default: a new temp folder)")
    args = parser.parse_args()
    folder = workspace(args.workdir)
    model = tiny_model(folder, args.model)
    runtime = ProcessRuntime()
    deltas: list[float] = []
    for run in range(1, args.runs + 1):
        print(f"run {run}:", flush=True)
        delta = one_run(runtime, "latency", model, folder)
        if delta is not None:
            deltas.append(delta)
    if not deltas:
        print("no run reached READY")
        return 1
    worst = max(deltas)
    print(
        f"\nREADY after /health: mean {statistics.mean(deltas):.3f} s, "
        f"max {worst:.3f} s (target < {TARGET_S} s)"
    )
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
