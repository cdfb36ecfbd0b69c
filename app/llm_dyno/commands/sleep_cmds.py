"""Sleep-mode commands: ``llm-dyno sleep NAME [--level 1|2]``, ``wake NAME``, and ``idle NAME``, the
headless idle timer (see :mod:`llm_dyno.core.runtime.sleep` and :mod:`llm_dyno.core.runtime.idle`)."""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import asdict
from typing import Any

from llm_dyno.commands.common import print_json, warn
from llm_dyno.core.errors import DynoError
from llm_dyno.core.runtime.base import ServerHandle
from llm_dyno.core.runtime.manager import ServerManager


def register(sub: Any) -> None:
    """Add the sleep-mode commands to the CLI."""
    p = sub.add_parser(
        "sleep", help="put a running server to sleep (vLLM sleep mode), freeing its GPU memory"
    )
    p.add_argument("name", help="profile name")
    p.add_argument(
        "--level",
        type=int,
        choices=(1, 2),
        default=1,
        help="1: weights kept in host RAM (fast wake); 2: weights discarded (reloaded on wake)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_sleep)

    p = sub.add_parser("wake", help="wake a sleeping server (level 2 reloads its weights first)")
    p.add_argument("name", help="profile name")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_wake)

    p = sub.add_parser(
        "idle", help="run a server's idle timeout headless: sleep or stop it after its idle_timeout"
    )
    p.add_argument("name", help="profile name")
    p.add_argument(
        "--after-s",
        type=float,
        metavar="S",
        help="idle seconds before acting (default: the profile's minutes)",
    )
    p.add_argument("--every", type=float, default=2.0, metavar="S", help="seconds between looks (default 2)")
    p.set_defaults(handler=cmd_idle)


def running(name: str) -> ServerHandle:
    """The live server of profile ``name``, found in the registry; DynoError when none runs."""
    manager = ServerManager()
    manager.adopt_all()
    for message in manager.warnings:
        warn(message)
    handle = manager.get(name)
    if handle is None or not handle.status.state.is_live:
        raise DynoError(
            f"'{name}' is not running", hint="see `llm-dyno status`; `llm-dyno launch NAME` starts it"
        )
    return handle


def cmd_sleep(args: argparse.Namespace) -> int:
    """``llm-dyno sleep NAME [--level N]``."""
    from llm_dyno.core.runtime.sleep import freed_text, sleep_server

    handle = running(args.name)
    record = sleep_server(handle.plan, args.level)
    if args.json:
        print_json({"profile": args.name, **asdict(record), "state": record.state})
        return 0
    print(f"'{args.name}' is {record.state}: took {record.sleep_s:.2f} s; {freed_text(record)}")
    return 0


def cmd_wake(args: argparse.Namespace) -> int:
    """``llm-dyno wake NAME``."""
    from llm_dyno.core.runtime.sleep import wake_server

    handle = running(args.name)
    result = wake_server(handle.plan)
    if args.json:
        print_json({"profile": args.name, "wake_s": result.wake_s, "calls": list(result.calls)})
        return 0
    print(f"'{args.name}' is awake: woke in {result.wake_s:.2f} s ({' → '.join(result.calls)})")
    return 0


def cmd_idle(args: argparse.Namespace) -> int:
    """``llm-dyno idle NAME [--after-s S]``: until the server is stopped by it, ends, or Ctrl-C."""
    from llm_dyno.core.runtime.idle import IdleEvent, duration_text, run_idle_timer

    handle = running(args.name)
    cancel = threading.Event()

    def emit(event: IdleEvent) -> None:
        reading = event.reading
        if event.kind == "tick" and reading is not None:
            why = reading.busy or "idle"
            text = f"  {why}: {duration_text(reading.remaining_s)} left"
            print(text, file=sys.stderr, flush=True)
        elif event.kind == "failed":
            print(f"warning: the idle sleep failed: {event.detail}", file=sys.stderr, flush=True)
        else:
            print(f"{event.kind}: '{args.name}' {event.detail}".rstrip(), flush=True)
        if not handle.status.state.is_live:
            cancel.set()

    try:
        run_idle_timer(
            handle.plan,
            stop=handle.stop,
            emit=emit,
            cancel=cancel,
            timeout_s=args.after_s,
            interval_s=args.every,
        )
    except KeyboardInterrupt:
        cancel.set()
        return 130
    return 0
