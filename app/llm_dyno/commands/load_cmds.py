"""``llm-dyno bench … --concurrency 1,2,4 / --rate 0.5,1 --slo ttft=2s,tpot=50ms``: load levels."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

from llm_dyno.commands.common import report_unsaved
from llm_dyno.commands.export_cmds import asked_exports
from llm_dyno.core.bench.load import (
    LoadResult,
    Slo,
    level_table,
    parse_concurrency,
    parse_rates,
    parse_slo,
)
from llm_dyno.core.bench.load_runner import (
    DEFAULT_LEVEL_TIMEOUT_S,
    LevelFinished,
    LevelStarted,
    LoadMessage,
    LoadPlan,
    levels_of,
)
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.export_file import write_export
from llm_dyno.core.exports.registry import ResultKind
from llm_dyno.core.history.store import HistoryEntry
from llm_dyno.core.jobs.load_job import LoadOutcome, LoadSpec, prepare_load, run_load
from llm_dyno.core.jobs.storing import StoreFailed
from llm_dyno.core.profiles.model import Profile


def add_load_args(b: argparse.ArgumentParser) -> None:
    """The load options of ``bench``."""
    b.add_argument(
        "--concurrency", metavar="N,N,…",
        help="closed loop: run the suite's prompts with N parallel streams per level, e.g. 1,2,4,8",
    )  # fmt: skip
    b.add_argument(
        "--rate", metavar="R,R,…",
        help="open loop: Poisson arrivals at R requests/s per level (seeded: --seed), e.g. 0.5,1,2",
    )  # fmt: skip
    b.add_argument("--slo", metavar="SLOS", help="goodput SLOs per request, e.g. ttft=2s,tpot=50ms,e2e=10s")
    b.add_argument(
        "--requests", type=int, metavar="N",
        help="with --concurrency/--rate: requests per level (default: prompts × runs, at least 2 × N)",
    )  # fmt: skip
    b.add_argument("--seed", type=int, default=0, help="with --rate: the arrival schedule's seed (default 0)")
    b.add_argument(
        "--level-timeout", type=float, default=DEFAULT_LEVEL_TIMEOUT_S, metavar="S",
        help="with --concurrency/--rate: give a level up after S seconds "
        f"(default {DEFAULT_LEVEL_TIMEOUT_S:g})",
    )  # fmt: skip


def wants_load(args: argparse.Namespace) -> bool:
    """Whether ``bench`` was asked for load levels."""
    return bool(args.concurrency or args.rate)


def _plan(args: argparse.Namespace) -> LoadPlan:
    conc = parse_concurrency(args.concurrency) if args.concurrency else ()
    rates = parse_rates(args.rate) if args.rate else ()
    slo = parse_slo(args.slo) if args.slo else Slo()
    return LoadPlan(levels_of(conc, rates), args.requests, args.seed, slo, args.level_timeout)


def _printer(event: object) -> None:
    if isinstance(event, StoreFailed):
        print(f"  warning: {event.message}", file=sys.stderr, flush=True)
    elif isinstance(event, LoadMessage):
        print(f"  {event.message}", flush=True)
    elif isinstance(event, LevelStarted):
        print(
            f"  level {event.index}/{event.total}: {event.level.describe()}, {event.requests} requests",
            flush=True,
        )
    elif isinstance(event, LevelFinished):
        d = event.result.summary(event.slo)
        tps = d["output_throughput_tps"]
        user = d["per_user_tps"]
        print(
            f"    {d['requests']} requests, {d['output_tokens']} tokens in {d['duration_s']:.2f} s: "
            f"{'—' if tps is None else f'{tps:.1f}'} tok/s output, "
            f"{'—' if user is None else f'{user:.1f}'} tok/s per user",
            flush=True,
        )


def cmd_load(args: argparse.Namespace, target: Profile | Endpoint, suite: Suite) -> int:
    """Run the load levels, print a table; stored level by level unless ``--no-save``."""
    others = [f"--{name}" for name in asked_exports(args, ResultKind.BENCH) if name != "json"]
    if others:
        raise DynoError(f"{', '.join(others)} goes with a plain benchmark; a load run writes --json")
    plan = _plan(args)
    spec = prepare_load(target, suite, plan, store=not args.no_save, gpu=args.gpu)
    b = spec.bench
    print(
        f"load on {b.endpoint.describe()} with suite {suite.name}: "
        f"{', '.join(lv.describe() for lv in plan.levels)} ({suite.warmups} warm-ups; {b.gpus.label})",
        flush=True,
    )
    outcome = _run_interruptible(spec)
    result = outcome.result
    if args.export_json:
        write_export(Path(args.export_json), result.to_json() + "\n", "the --json file")
    if result.levels:
        print("\n".join(level_table(result)))
    if outcome.result_id is not None:
        print(f"saved as #{outcome.result_id}")
    if outcome.unsaved is not None:
        report_unsaved(outcome.unsaved, result.to_json(), "load", args.export_json)
    if result.error or outcome.unsaved is not None:
        if result.error:
            print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 130 if result.cancelled else 0


def _run_interruptible(spec: LoadSpec) -> LoadOutcome:
    """Run the job in a thread: Ctrl-C cancels it (the streams close within a tenth of a second) and the
    levels already finished are printed and kept."""
    cancel = threading.Event()
    finished = threading.Event()
    box: list[LoadOutcome] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            box.append(run_load(spec, _printer, cancel))
        except BaseException as exc:  # handed to the main thread, which reports it
            failure.append(exc)
        finally:
            finished.set()

    threading.Thread(target=work, name="load-job", daemon=True).start()
    try:
        # sleep, not Thread.join: a join interrupted by Ctrl-C can report a live thread as ended
        while not finished.is_set():
            time.sleep(0.1)
    except KeyboardInterrupt:
        print("  cancelling: finished levels are kept", flush=True)
        cancel.set()
        end = time.monotonic() + 30
        while not finished.is_set() and time.monotonic() < end:
            time.sleep(0.1)
    if failure:
        raise failure[0]
    if not box:
        raise DynoError("the load run did not stop within 30 s of the cancel")
    return box[0]


def show_load(entry: HistoryEntry, result: LoadResult) -> None:
    """``history show ID`` of a load run."""
    slo = f"  SLO {result.slo.describe()}" if not result.slo.empty else ""
    print(
        f"#{entry.id}  load  suite {result.suite}  model {result.model}  at {result.url}  {result.started}"
        f"  profile {result.profile}{slo}"
    )
    for line in level_table(result):
        print(f"  {line}")
    if result.cancelled:
        print("  cancelled: the levels above finished")
    if result.error:
        print(f"  error: {result.error}")


def load_list_line(entry: HistoryEntry) -> str:
    """``history list`` line of a load run."""
    tags = f"  [{', '.join(entry.tags)}]" if entry.tags else ""
    note = f"  {entry.note}" if entry.note else ""
    return f"#{entry.id:<4} {entry.started:<25} {entry.profile or '—':<20} {entry.suite:<10} load{tags}{note}"


def load_json(entry: HistoryEntry, result: LoadResult) -> dict[str, Any]:
    """``history show ID --json`` of a load run."""
    return result.model_dump(mode="json") | {"id": entry.id, "tags": list(entry.tags), "note": entry.note}
