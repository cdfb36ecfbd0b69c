"""Launch / stop / kill cycles against the real process backend; reports orphan processes and threads.

Each cycle launches a tiny CPU vLLM server, waits a random moment (often mid-load), then ends it one
of three ways: ``stop()`` (SIGTERM to the group), SIGKILL of the main process (a crash: the handle
must notice, classify and clean the group up), or — every ``--ready-every`` cycles — stop after
READY. At the end no vLLM process and no runtime thread may be left (expected: 0 and 0).

    .venv/bin/python benchmarks/launch_cycles.py --cycles 100
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time

from _common import cpu_profile, dyno_threads, live_processes, tiny_model, workspace

from llm_dyno.core.runtime.base import ServerState
from llm_dyno.core.runtime.process_backend import ProcessHandle, ProcessRuntime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--ready-every", type=int, default=10, help="every Nth cycle waits for READY first")
    parser.add_argument("--max-wait", type=float, default=20.0, help="longest random wait before ending (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="model folder (default: build a tiny one)")
    parser.add_argument("--workdir", help="scratch folder (default: a new temp folder)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    folder = workspace(args.workdir)
    model = tiny_model(folder, args.model)
    runtime = ProcessRuntime()
    outcomes: dict[str, int] = {}
    started = time.monotonic()
    for cycle in range(1, args.cycles + 1):
        handle = runtime.launch(runtime.plan(cpu_profile("cycle", model, folder)))
        assert isinstance(handle, ProcessHandle)
        if args.ready_every and cycle % args.ready_every == 0:
            how = "ready+stop"
            status = handle.wait_ready(300)
            if status.state is not ServerState.READY:
                how = f"ready+stop (not ready: {status.state.value})"
            handle.stop(30)
        else:
            time.sleep(rng.uniform(0.0, args.max_wait))
            if rng.random() < 0.5:
                how = "stop"
                handle.stop(30)
            else:
                how = "kill"
                os.kill(handle.pid, signal.SIGKILL)
                handle.wait_done(60)
                handle.stop(5)  # joins the threads of a handle that already ended
        final = handle.status
        key = f"{how} -> {final.state.value}"
        outcomes[key] = outcomes.get(key, 0) + 1
        left = live_processes(str(model))
        print(f"cycle {cycle:3d}: {key:32s} threads={len(dyno_threads())} processes={len(left)}", flush=True)
    time.sleep(1)
    orphans = live_processes(str(model))
    threads = dyno_threads()
    print(f"\n{args.cycles} cycles in {time.monotonic() - started:.0f} s")
    for key, count in sorted(outcomes.items()):
        print(f"  {count:4d}  {key}")
    print(f"orphan processes: {len(orphans)}")
    for line in orphans:
        print(f"  {line}")
    print(f"leftover threads: {len(threads)} {threads if threads else ''}")
    return 0 if not orphans and not threads else 1


if __name__ == "__main__":
    sys.exit(main())
