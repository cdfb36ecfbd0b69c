"""Launch / stop / kill cycles against a real runtime; reports orphan processes, containers and threads.

Each cycle launches a server, waits a random moment (often mid-load), then ends it one of three ways:
``stop()``, a kill from outside (the handle must notice, classify and clean up), or — every
``--ready-every`` cycles — stop after READY. At the end nothing may be left (expected: all 0).

- ``--runtime process`` (default): a tiny CPU vLLM server as a local process; the kill is SIGKILL of
  its main process.
- ``--runtime docker``: a container through ``DockerRuntime`` with the offline test images
  (tests/support/images.py): ``TINY_IMAGE`` (a fake ``vllm serve``; ``--tiny-delay`` seconds of
  "loading" so that random waits land mid-load) and, every ``--vllm-every`` cycles, ``VLLM_IMAGE``
  (real vLLM on the CPU serving the tiny model). The kill is ``docker kill`` of the container. Orphans:
  containers with the ``llm-dyno.managed`` label or made by this run, host processes of the run's
  containers (their shims too).

    .venv/bin/python benchmarks/launch_cycles.py --cycles 100
    .venv/bin/python benchmarks/launch_cycles.py --runtime docker --cycles 100 --vllm-every 10
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable

from _common import cpu_profile, dyno_threads, live_processes, tiny_model, workspace

from llm_dyno.core.runtime.base import ServerHandle, ServerState
from llm_dyno.core.runtime.process_backend import ProcessHandle, ProcessRuntime


def open_fds() -> int:
    """File descriptors this process holds (sockets of leaked clients show here)."""
    return len(os.listdir("/proc/self/fd"))


def end_cycle(
    handle: ServerHandle, cycle: int, args: argparse.Namespace, rng: random.Random, kill: Callable[[], str]
) -> str:
    """End one cycle's server as the schedule says; returns how (and in which state it was ended)."""
    if args.ready_every and cycle % args.ready_every == 0:
        status = handle.wait_ready(300)
        how = "ready+stop" if status.state is ServerState.READY else f"ready+stop (not ready: {status.state})"
        handle.stop(30)
        return how
    time.sleep(rng.uniform(0.0, args.max_wait))
    at = handle.status.state.value
    if rng.random() < 0.5:
        handle.stop(30)
        return f"stop@{at}"
    how = kill()
    handle.wait_done(60)
    handle.stop(5)  # joins the threads of a handle that already ended
    return f"{how}@{at}"


# ---- process backend ------------------------------------------------------------------------------
def run_process(args: argparse.Namespace, rng: random.Random, outcomes: dict[str, int]) -> tuple[list, list]:
    folder = workspace(args.workdir)
    model = tiny_model(folder, args.model)
    runtime = ProcessRuntime()
    for cycle in range(1, args.cycles + 1):
        handle = runtime.launch(runtime.plan(cpu_profile("cycle", model, folder)))
        assert isinstance(handle, ProcessHandle)

        def kill(handle: ProcessHandle = handle) -> str:
            os.kill(handle.pid, signal.SIGKILL)
            return "kill"

        how = end_cycle(handle, cycle, args, rng, kill)
        key = f"{how} -> {handle.status.state.value}"
        outcomes[key] = outcomes.get(key, 0) + 1
        left = live_processes(str(model))
        print(
            f"cycle {cycle:3d}: {key:40s} threads={len(dyno_threads())} processes={len(left)} "
            f"fds={open_fds()}",
            flush=True,
        )
    time.sleep(1)
    return live_processes(str(model)), dyno_threads()


# ---- docker backend -------------------------------------------------------------------------------
def run_docker(
    args: argparse.Namespace, rng: random.Random, outcomes: dict[str, int]
) -> tuple[list, list, list[str]]:
    import docker
    from tests.support import vllm_env
    from tests.support.images import TINY_IMAGE, VLLM_IMAGE, ensure_test_images, host_mounts

    from llm_dyno.core.profiles.model import DockerSettings, Profile
    from llm_dyno.core.runtime.docker_backend import DockerRuntime, DockerServerHandle
    from llm_dyno.core.runtime.docker_common import LABEL_MANAGED

    folder = workspace(args.workdir)
    run_id = uuid.uuid4().hex[:8]
    marker = f"bench-{run_id}"  # in every container's name and command line
    client = docker.from_env()
    client.ping()
    built = ensure_test_images(client)
    if built:
        print(f"built test images: {', '.join(built)}")
    model = tiny_model(folder, args.model) if args.vllm_every else None
    before = {c.id for c in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"})}
    if before:
        print(f"note: {len(before)} llm-dyno.managed container(s) existed before the run (not counted)")
    runtime = DockerRuntime()
    container_ids: list[str] = []
    images: dict[str, int] = {}

    def profile(cycle: int, real: bool) -> Profile:
        name = f"llm-dyno-{marker}-{cycle}"
        port = vllm_env.free_port()
        if real and model is not None:
            settings = DockerSettings(
                image=VLLM_IMAGE,
                container_name=name,
                ports=(f"{port}:8000",),
                volumes=(*host_mounts(), f"{model}:{model}:ro"),
                shm_size="1g",
            )
            flags = ("--served-model-name", marker, "--host", "0.0.0.0", "--port", "8000")  # noqa: S104
            fast = (*vllm_env.FAST_ARGS, "--max-model-len", "1024")
            return Profile(name=name, model=str(model), args=(*flags, *fast), docker=settings)
        settings = DockerSettings(
            image=TINY_IMAGE,
            container_name=name,
            ports=(f"{port}:8000",),
            volumes=host_mounts(with_vllm=False),
        )
        flags = ("--port", "8000", "--served-model-name", marker, "--delay", str(args.tiny_delay))
        return Profile(name=name, model="tiny", args=flags, docker=settings)

    def docker_kill(handle: DockerServerHandle) -> str:
        """``docker kill`` the container once it runs (a created one cannot be killed yet)."""
        deadline = time.monotonic() + 60
        error = ""
        while time.monotonic() < deadline:
            cid = handle.container_id
            if not handle.status.state.is_live:
                return "kill (ended first)"
            if cid is not None and handle.status.state not in (ServerState.PULLING, ServerState.CREATING):
                done = subprocess.run(
                    ["docker", "kill", cid], capture_output=True, text=True, timeout=30, check=False
                )
                if done.returncode == 0:
                    return "docker kill"
                error = done.stderr.strip()
            time.sleep(0.05)
        print(f"  could not docker kill: {error}", flush=True)
        return "kill (failed)"

    for cycle in range(1, args.cycles + 1):
        real = bool(args.vllm_every) and cycle % args.vllm_every == 0
        image = "vllm" if real else "tiny"
        images[image] = images.get(image, 0) + 1
        handle = runtime.launch(runtime.plan(profile(cycle, real)))
        how = end_cycle(handle, cycle, args, rng, lambda h=handle: docker_kill(h))
        if handle.container_id:
            container_ids.append(handle.container_id)
        key = f"[{image}] {how} -> {handle.status.state.value}"
        outcomes[key] = outcomes.get(key, 0) + 1
        mine = client.containers.list(all=True, filters={"name": marker})
        print(
            f"cycle {cycle:3d}: {key:44s} threads={len(new_threads())} containers={len(mine)} "
            f"fds={open_fds()}",
            flush=True,
        )
    time.sleep(1)
    left = {c.id: c for c in client.containers.list(all=True, filters={"name": marker})}
    for c in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"}):
        if c.id not in before:
            left[c.id] = c
    orphan_containers = [f"{c.short_id} {c.name} {c.status}" for c in left.values()]
    markers = [marker, *container_ids] + ([str(model)] if model else [])
    orphans = sorted({p for m in markers for p in live_processes(m)})
    client.close()
    print(f"images: {', '.join(f'{n} {k}' for k, n in sorted(images.items()))}")
    return orphans, new_threads(), orphan_containers


_BASELINE: set[int] = set()


def new_threads() -> list[str]:
    """Threads alive now that were not alive when the run began."""
    return [t.name for t in threading.enumerate() if t.ident not in _BASELINE]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", choices=("process", "docker"), default="process")
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--ready-every", type=int, default=10, help="every Nth cycle waits for READY first")
    parser.add_argument("--max-wait", type=float, default=20.0, help="longest random wait before ending (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="model folder (default: build a tiny one)")
    parser.add_argument("--workdir", help="scratch folder (default: a new temp folder)")
    parser.add_argument(
        "--vllm-every",
        type=int,
        default=10,
        help="docker: every Nth cycle runs real vLLM (VLLM_IMAGE), others the tiny image; 1: all, 0: none",
    )
    parser.add_argument(
        "--tiny-delay", type=float, default=3.0, help="docker: seconds the tiny image 'loads' before serving"
    )
    args = parser.parse_args()
    if args.runtime == "docker" and "--max-wait" not in sys.argv:
        args.max_wait = 5.0

    _BASELINE.update(t.ident for t in threading.enumerate() if t.ident is not None)
    rng = random.Random(args.seed)
    outcomes: dict[str, int] = {}
    fds = open_fds()
    started = time.monotonic()
    containers: list[str] = []
    if args.runtime == "docker":
        orphans, threads, containers = run_docker(args, rng, outcomes)
    else:
        orphans, threads = run_process(args, rng, outcomes)
    print(f"\n{args.cycles} cycles ({args.runtime}) in {time.monotonic() - started:.0f} s")
    for key, count in sorted(outcomes.items()):
        print(f"  {count:4d}  {key}")
    print(f"orphan processes: {len(orphans)}")
    for line in orphans:
        print(f"  {line}")
    if args.runtime == "docker":
        print(f"orphan containers: {len(containers)}")
        for line in containers:
            print(f"  {line}")
    print(f"leftover threads: {len(threads)} {threads if threads else ''}")
    print(f"open file descriptors: {fds} at the start, {open_fds()} at the end")
    return 0 if not orphans and not threads and not containers else 1


if __name__ == "__main__":
    sys.exit(main())
