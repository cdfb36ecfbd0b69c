"""Server commands: launch, stop, status, logs, plan."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from llm_dyno.commands.common import print_json, store, warn
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import HOOKS
from llm_dyno.core.runtime.base import FailureReason, ServerHandle, ServerState, ServerStatus
from llm_dyno.core.runtime.idle import idle_text, shown_state
from llm_dyno.core.runtime.launch_spec import ContainerSpec
from llm_dyno.core.runtime.logfiles import latest_log
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.runtime.memory import compare_kv


def register(sub: Any) -> None:
    """Add the server commands to the CLI."""
    p = sub.add_parser("launch", help="start a profile's server")
    p.add_argument("name", help="profile name")
    p.add_argument("--wait", action="store_true", help="wait until the server is ready (exit 1 if it fails)")
    p.add_argument("--timeout", type=float, default=600.0, help="with --wait: seconds to wait (default 600)")
    p.set_defaults(handler=cmd_launch)

    p = sub.add_parser("stop", help="stop a profile's server")
    p.add_argument("name")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before the server is killed")
    p.set_defaults(handler=cmd_stop)

    p = sub.add_parser("status", help="every known server: profile, runtime, state, url, since")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--live",
        action="store_true",
        help="also sample each ready server for a few seconds: generation tok/s and GPU power (W)",
    )
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("logs", help="a server's log (the latest run's when it has stopped)")
    p.add_argument("name")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing until the server ends")
    p.set_defaults(handler=cmd_logs)

    p = sub.add_parser("plan", help="what would run for a profile, without running it, and will it fit")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help='machine-readable output (estimate: "memory")')
    p.add_argument("--gpu", metavar="NAME", help="estimate for this card (datasheet table), e.g. 'RTX 3090'")
    p.set_defaults(handler=cmd_plan)


def _adopted() -> ServerManager:
    manager = ServerManager()
    manager.adopt_all()
    for message in manager.warnings:
        warn(message)
    return manager


def print_failure(reason: FailureReason | None, name: str) -> None:
    """The classified reason, what to do, and the log lines that show it (stderr)."""
    if reason is None:
        print(f"error: '{name}' failed", file=sys.stderr)
        return
    print(f"error: '{name}' failed: {reason.summary} [{reason.kind.value}]", file=sys.stderr)
    if reason.hint:
        print(f"  → {reason.hint}", file=sys.stderr)
    if reason.exit_code is not None:
        print(f"  exit code {reason.exit_code}", file=sys.stderr)
    for line in reason.excerpt:  # a log line can be 64 Ki characters: the log file has it whole
        print(f"  | {line if len(line) <= 1000 else line[:1000] + ' …'}", file=sys.stderr)


def cmd_launch(args: argparse.Namespace) -> int:
    """``llm-dyno launch NAME [--wait] [--timeout S]``."""
    profile = store().get(args.name)
    manager = _adopted()
    handle = manager.launch(profile)
    for note in handle.plan.notes():  # where it listens and what to know, as `plan` says it
        print(f"  {note}", file=sys.stderr)
    status = handle.status
    if status.state is ServerState.FAILED:
        print_failure(status.failure, profile.name)
        return 1
    log = getattr(handle, "log_path", None)
    # a port Docker picks is known once the container runs (status and the ready line show it)
    where = handle.plan.base_url if handle.plan.host_port else "a host port Docker picks"
    print(f"launched '{profile.name}' ({handle.plan.runtime}) at {where}" + (f", log {log}" if log else ""))
    if not args.wait:
        return 0

    def show(s: ServerStatus) -> None:
        pct = f" {s.progress:.0%}" if s.progress is not None else ""
        print(f"  {s.state.value}: {s.detail}{pct}", file=sys.stderr, flush=True)

    unsubscribe = handle.subscribe(show)
    try:
        status = handle.wait_ready(args.timeout)
    except KeyboardInterrupt:
        unsubscribe()
        print(f"interrupted; stopping '{profile.name}'", file=sys.stderr)
        handle.stop()
        return 130
    unsubscribe()
    if status.state is ServerState.READY:
        print(f"ready: {handle.plan.base_url} ({status.detail})")
        print(f"  {compare_kv(handle.plan, handle.logs.lines()).line()}")
        return 0
    if status.state is ServerState.FAILED:
        print_failure(status.failure, profile.name)
        return 1
    print(
        f"error: '{profile.name}' not ready after {args.timeout:g} s "
        f"(state {status.state.value}: {status.detail}); "
        f"it keeps loading — `llm-dyno stop {profile.name}` to stop it",
        file=sys.stderr,
    )
    return 1


def cmd_stop(args: argparse.Namespace) -> int:
    """``llm-dyno stop NAME``."""
    manager = _adopted()
    handle = manager.get(args.name)
    if handle is None:
        raise DynoError(f"'{args.name}' is not running", hint="see `llm-dyno status`")
    status = handle.stop(args.timeout)
    print(f"stopped '{handle.profile_name}' ({status.detail})")
    return 0


def _since(handle: ServerHandle) -> float:
    started = getattr(handle, "started_at", None)
    return float(started) if isinstance(started, (int, float)) else handle.status.since


def cmd_status(args: argparse.Namespace) -> int:
    """``llm-dyno status [--json]``."""
    manager = _adopted()
    handles = manager.handles()
    # A freshly adopted handle checks readiness in the background: give it a moment.
    deadline = time.monotonic() + 2.0
    for handle in handles:
        handle.wait_ready(max(0.0, deadline - time.monotonic()))
    rows = [
        {
            "profile": h.profile_name,
            "runtime": h.plan.runtime,
            "state": shown_state(h, _since(h)),
            "detail": h.status.detail,
            "url": h.plan.base_url,
            "since": datetime.fromtimestamp(_since(h)).astimezone().isoformat(timespec="seconds"),
            "pid": getattr(h, "pid", None),
            "log": str(getattr(h, "log_path", "") or ""),
            "idle": idle_text(h),
        }
        for h in handles
    ]
    if args.live:
        from llm_dyno.core.jobs.server_watch import live_figures

        figures = live_figures(handles)
        for row in rows:
            live = figures.get(str(row["profile"]))
            row["generation_tps"] = live.generation_tps if live is not None else None
            row["gpu_power_w"] = live.power_w if live is not None else None
            row["gpus"] = live.gpus if live is not None else None
            row["answering"] = live.answering if live is not None else None
    if args.json:
        print_json(rows)
    elif not rows:
        print("no servers running")
    else:
        for r in rows:
            line = f"{r['profile']:<24} {r['runtime']:<8} {r['state']:<16} {r['url']:<28} since {r['since']}"
            if r["idle"]:
                line += f"  ({r['idle']})"
            if args.live:
                line += "  " + _live_text(r)
            print(line)
    return 0


def _live_text(row: dict[str, object]) -> str:
    """``12.3 tok/s · 310 W (GPU 0)``, ``not answering``, or ``—`` for a server not ready."""
    if row.get("answering") is None:
        return "—"
    if row["answering"] is False:
        return "not answering"
    tps = row.get("generation_tps")
    text = f"{tps:.1f} tok/s" if isinstance(tps, float) else "— tok/s"
    watts = row.get("gpu_power_w")
    if isinstance(watts, float):
        text += f" · {watts:.0f} W ({row.get('gpus')})"
    return text


def cmd_logs(args: argparse.Namespace) -> int:
    """``llm-dyno logs NAME [--follow]``."""
    manager = _adopted()
    handle = manager.get(args.name)
    path: Path | None = getattr(handle, "log_path", None) if handle is not None else None
    if path is None and handle is not None:
        for line in handle.logs.lines():  # a backend without a log file (docker): its buffer
            print(line)
        if args.follow:
            unsubscribe = handle.logs.subscribe(lambda _ts, line: print(line, flush=True))
            handle.wait_done()
            unsubscribe()
        return 0
    path = path or latest_log(args.name)
    if path is None or not path.exists():
        raise DynoError(f"no log for '{args.name}'", hint="launch it first: `llm-dyno launch NAME`")
    out = sys.stdout.buffer
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(65536)
            if chunk:
                out.write(chunk)
                continue
            out.flush()
            if not args.follow or handle is None or not handle.status.state.is_live:
                break
            time.sleep(0.2)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """``llm-dyno plan NAME``."""
    profile = store().get(args.name)
    manager = ServerManager()
    plan = manager.plan(profile, gpu_name=args.gpu)
    if plan.hold is not None:  # the servers already on its GPUs count in its budget
        manager.adopt_all()
        for message in manager.warnings:
            warn(message)
    plan = manager.with_budget(plan)
    if args.json:
        print_json(
            {
                "profile": profile.name,
                "runtime": plan.runtime,
                "base_url": plan.base_url,
                "host_port": plan.host_port or None,  # None: chosen by Docker at launch
                "warnings": [{"kind": w.kind.value, "text": w.text} for w in plan.warnings],
                "command": plan.describe(),
                # what launch hands to Docker (secrets as their references), from the launch's own function
                "container": plan.spec.for_engine(reveal=False)
                if isinstance(plan.spec, ContainerSpec)
                else None,
                # files the launch writes into the container before it starts (compose secrets)
                "files": [f.to_dict() for f in plan.spec.files]
                if isinstance(plan.spec, ContainerSpec)
                else [],
                # compose lifecycle hooks: init containers before the start, docker exec'd after the
                # start / before the stop
                "hooks": {
                    when: [h.model_dump(exclude_defaults=True, mode="json") for h in getattr(plan.spec, when)]
                    for when in HOOKS
                }
                if isinstance(plan.spec, ContainerSpec)
                else {},
                "memory": plan.memory.model_dump(mode="json") if plan.memory is not None else None,
                "gpu_budget": plan.budget.to_dict() if plan.budget is not None else None,
            }
        )
        return 0
    print(plan.report())
    return 0
