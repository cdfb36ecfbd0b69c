"""``llm-dyno bench``, ``llm-dyno history …``, ``llm-dyno sweep`` and ``llm-dyno ab``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_dyno.commands.common import gpu_index, print_json, report_unsaved, store
from llm_dyno.commands.export_cmds import add_export_flags, write_asked
from llm_dyno.commands.load_cmds import (
    add_load_args,
    cmd_load,
    load_json,
    load_list_line,
    show_load,
    wants_load,
)
from llm_dyno.core.bench.ceiling import roofline_summary
from llm_dyno.core.bench.report import burst_note, markdown_line, prompt_lines
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT, EventKind, ProgressEvent, ThermalWait
from llm_dyno.core.bench.suite import STANDARD, Suite, load_suite
from llm_dyno.core.bench.sweep import sweep_table
from llm_dyno.core.bench.workloads.records import workload_of
from llm_dyno.core.bench.workloads.text import workload_lines
from llm_dyno.core.endpoint import Endpoint, url_endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.export_file import write_export
from llm_dyno.core.exports.registry import ResultKind
from llm_dyno.core.history.compare import compare_many, render_text
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.jobs.ab_job import prepare_ab, run_ab
from llm_dyno.core.jobs.bench_job import prepare_bench, run_bench
from llm_dyno.core.jobs.storing import ResultStored, StoreFailed
from llm_dyno.core.jobs.sweep_job import parse_caps, prepare_sweep, run_sweep_job
from llm_dyno.core.profiles.model import Profile


def register(sub: Any) -> None:
    """Add ``bench``, ``history`` and ``sweep`` to the CLI."""
    b = sub.add_parser("bench", help="run a benchmark suite against a profile's server or a URL")
    b.add_argument("name", nargs="?", help="profile whose running server to benchmark")
    b.add_argument("--url", help="server URL instead of a profile, e.g. http://127.0.0.1:8000")
    b.add_argument("--model", help="with --url: the served model name")
    b.add_argument(
        "--api-key-env", metavar="VAR", help="with --url: environment variable holding the API key"
    )
    b.add_argument(
        "--gpu", type=gpu_index, metavar="N", help="with --url: this machine's GPU the server runs on"
    )
    _suite_args(b)
    _thermal_arg(b)
    b.add_argument("--runs", type=int, help="measured runs per prompt (default: the suite's)")
    b.add_argument("--warmups", type=int, help="warm-up runs per prompt (default: the suite's)")
    add_export_flags(b, ResultKind.BENCH)
    b.add_argument("--no-save", action="store_true", help="do not store the result in the history")
    add_load_args(b)
    b.set_defaults(handler=cmd_bench)

    h = sub.add_parser("history", help="list, show, compare, tag, annotate and delete stored results")
    hs = h.add_subparsers(dest="history_command", metavar="SUBCOMMAND", required=True)
    ls = hs.add_parser("list", help="stored results, newest first")
    ls.add_argument("--profile")
    ls.add_argument("--suite")
    ls.add_argument("--tag")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=cmd_history_list)
    show = hs.add_parser("show", help="one result")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_history_show)
    cmp_ = hs.add_parser("compare", help="compare results with the first (noise-aware verdicts)")
    cmp_.add_argument("ids", type=int, nargs="+")
    cmp_.add_argument("--json", action="store_true")
    cmp_.set_defaults(handler=cmd_history_compare)
    tag = hs.add_parser("tag", help="tag a result")
    tag.add_argument("id", type=int)
    tag.add_argument("tag")
    tag.set_defaults(handler=cmd_history_tag)
    note = hs.add_parser("note", help="set a result's note")
    note.add_argument("id", type=int)
    note.add_argument("text")
    note.set_defaults(handler=cmd_history_note)
    rm = hs.add_parser("delete", help="delete a result")
    rm.add_argument("id", type=int)
    rm.set_defaults(handler=cmd_history_delete)

    s = sub.add_parser("sweep", help="benchmark a profile's server at several GPU power caps")
    s.add_argument("name", help="profile whose running server to benchmark")
    s.add_argument("--caps", required=True, help="comma-separated caps in watts, e.g. 230,260,290,330")
    s.add_argument("--gpu", type=gpu_index, help="GPU index whose limit to set (default: the profile's GPUs)")
    s.add_argument("--suite", default="quick", help="suite name or file (default: quick)")
    _thermal_arg(s)
    s.set_defaults(handler=cmd_sweep)

    ab = sub.add_parser(
        "ab",
        help="A/B: launch the profile without and with its speculative config (or --against "
        "another profile), compare",
    )
    ab.add_argument("name", help="profile with a --speculative-config (it must not be running)")
    ab.add_argument(
        "--against", metavar="OTHER",
        help="the baseline profile to compare NAME with (default: NAME without its speculative config)",
    )  # fmt: skip
    ab.add_argument("--suite", default="community", help="suite name or file (default: community)")
    ab.add_argument("--runs", type=int, help="measured runs per prompt (default: the suite's)")
    ab.add_argument("--warmups", type=int, help="warm-up runs per prompt (default: the suite's)")
    ab.add_argument("--json", metavar="FILE", help="write both results and the verdicts as JSON")
    _thermal_arg(ab)
    ab.add_argument(
        "--rounds", type=int, default=2, metavar="N",
        help="take turns N times (A B A B …, a launch of each side per round; default 2, 1: A then B)",
    )  # fmt: skip
    ab.set_defaults(handler=cmd_ab)


def _thermal_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-thermal-wait",
        action="store_true",
        help="with a GPU: start each prompt at once instead of waiting for a stable temperature",
    )


def _thermal(args: argparse.Namespace) -> ThermalWait | None:
    return None if args.no_thermal_wait else DEFAULT_THERMAL_WAIT


def _suite_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", default="community", help="suite name or file (default: community)")


def _target(args: argparse.Namespace) -> Profile | Endpoint:
    if args.name:
        return store().get(args.name)
    if not args.url or not args.model:
        raise DynoError("give a profile name, or both --url and --model")
    return url_endpoint(args.url, args.model, api_key_env=args.api_key_env)


def printer_for(suite: Suite) -> Callable[[object], None]:
    """A printer of the events of bench, sweep and A/B jobs that counts warm-ups and measured runs
    apart ("warm-up 1/1", "run 2/2")."""
    return lambda event: _printer(event, suite.warmups, suite.runs)


def _printer(event: object, warmups: int, runs: int = 0) -> None:
    if isinstance(event, ResultStored):
        return  # said once at the end ("saved as #N"); stored after every run meanwhile
    if isinstance(event, StoreFailed):
        print(f"  warning: {event.message}", file=sys.stderr, flush=True)
        return
    if not isinstance(event, ProgressEvent):
        return
    if event.kind == EventKind.MESSAGE:
        print(f"  {event.message}", flush=True)
    elif event.kind == EventKind.RUN_FINISHED and event.run is not None:
        r = event.run
        # the runner numbers warm-ups and runs together (1..warmups+runs); people count them apart
        if r.warmup:
            # a workload's own warm-ups (a context sweep's calibration) are counted out of their group
            of = warmups if event.total == warmups + runs else event.total
            label = f"warm-up {event.index}/{of}"
        else:
            label = f"run {event.index - warmups}/{event.total - warmups}"
        ttft = f"{r.ttft_s:.3f}s" if r.ttft_s is not None else "—"
        if r.reasoning is not None:  # TTFT is the first thinking token; the answer's comes later
            ttft += f" ({r.reasoning.describe()})"
        acc = (
            f"  accept {r.acceptance.rate * 100:.0f}%"
            if r.acceptance and r.acceptance.rate is not None
            else ""
        )
        if r.request_acceptance is not None:  # the server's own figure for this request, beside /metrics
            ra = r.request_acceptance
            acc += f"  request: accept {ra.rate * 100:.0f}% len {ra.mean_length:.2f} ({ra.steps} steps)"
        print(
            f"  {event.prompt:<10} {label:<12} {r.completion_tokens} tok  "
            f"wall {r.wall_tps:.1f} TPS  TTFT {ttft}{acc}",
            flush=True,
        )
        for w in r.warnings:
            print(f"    warning: {w}", flush=True)


def _suite(args: argparse.Namespace) -> Suite:
    return load_suite(args.suite).with_counts(
        runs=getattr(args, "runs", None), warmups=getattr(args, "warmups", None)
    )


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the suite, print progress and the Markdown line; the job stores it run by run unless
    ``--no-save``."""
    target = _target(args)
    suite = _suite(args)
    if isinstance(target, Profile) and (args.api_key_env or args.gpu is not None):
        raise DynoError("--api-key-env and --gpu go with --url; a profile names its own key and GPUs")
    if wants_load(args):
        if suite.kind != STANDARD:  # a load level sends the prompts as written: no turns, no prefix
            raise DynoError(
                f"suite {suite.name} is a {suite.kind} workload, which runs one request at a time",
                hint="run it without --concurrency / --rate, or give the load a standard suite",
            )
        return cmd_load(args, target, suite)
    spec = prepare_bench(target, suite, store=not args.no_save, gpu=args.gpu, thermal_wait=_thermal(args))
    print(
        f"benchmarking {spec.endpoint.describe()} with suite {suite.name} "
        f"({suite.warmups} warm-ups, {suite.runs} runs; {spec.gpus.label})",
        flush=True,
    )
    outcome = run_bench(spec, printer_for(suite))
    result = outcome.result
    write_asked(args, ResultKind.BENCH, result)
    if result.all_runs():
        print(markdown_line(result))
        print("\n".join(prompt_lines(result)))
        if (note := burst_note(result)) is not None:
            print(note)
        print(roofline_summary(result))
    if (report := workload_of(result.context.extra)) is not None:
        print("\n".join(workload_lines(report)))
    if outcome.result_id is not None:
        print(f"saved as #{outcome.result_id}")
    if outcome.unsaved is not None:
        report_unsaved(outcome.unsaved, result.to_json(), "bench", args.export_json)
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    if outcome.unsaved is not None:
        return 1
    return 130 if result.cancelled else 0


def cmd_history_list(args: argparse.Namespace) -> int:
    """Print stored results."""
    with HistoryStore() as history:
        entries = history.list(profile=args.profile, suite=args.suite, tag=args.tag, kind=None)
    if args.json:
        print_json([e.model_dump(mode="json") for e in entries])
        return 0
    if not entries:
        print("no stored results yet: `llm-dyno bench PROFILE`")
    for e in entries:
        if e.kind == "load":
            print(load_list_line(e))
            continue
        narr = f"{e.narr_wall_tps:.1f}" if e.narr_wall_tps is not None else "—"
        code = f"{e.code_wall_tps:.1f}" if e.code_wall_tps is not None else "—"
        tags = f"  [{', '.join(e.tags)}]" if e.tags else ""
        note = f"  {e.note}" if e.note else ""
        print(
            f"#{e.id:<4} {e.started:<25} {e.profile or '—':<20} {e.suite:<10} narr {narr:>6} code {code:>6}"
            f"{tags}{note}"
        )
    return 0


def cmd_history_show(args: argparse.Namespace) -> int:
    """Print one result."""
    with HistoryStore() as history:
        if history.entry(args.id).kind == "load":
            entry, load = history.get_load(args.id)
            if args.json:
                print_json(load_json(entry, load))
            else:
                show_load(entry, load)
            return 0
        stored = history.get(args.id)
    if args.json:
        print_json(
            stored.result.to_dict()
            | {"id": stored.entry.id, "tags": list(stored.entry.tags), "note": stored.entry.note}
        )
        return 0
    _show(stored.entry.id, stored.result)
    return 0


def _show(rid: int, result: BenchResult) -> None:
    ctx = result.context
    print(f"#{rid}  suite {result.suite}  model {ctx.model}  at {ctx.url}  {ctx.started}")
    print(f"  vLLM {ctx.vllm_version or '?'}  {ctx.device}  profile {ctx.profile_name}")
    if (report := workload_of(ctx.extra)) is not None:
        print("\n".join(f"  {line}" for line in workload_lines(report)))
    for p in result.prompts:
        for metric in ("wall_tps", "decode_tps", "ttft_s"):
            s = p.summary(metric)
            if s:
                print(
                    f"  {p.name:<10} {metric:<11} mean {s.mean:9.3f}  std {s.std:8.3f}"
                    f"  cv {s.cv * 100:5.1f}%  min {s.min:9.3f}  max {s.max:9.3f}  n={s.n}"
                )
    print(f"  {markdown_line(result)}")
    for line in prompt_lines(result):
        print(f"  {line}")
    if result.error:
        print(f"  error: {result.error}")


def cmd_history_compare(args: argparse.Namespace) -> int:
    """Compare results with the first one."""
    if len(args.ids) < 2:
        raise DynoError("compare needs at least two ids")
    with HistoryStore() as history:
        items: list[tuple[int | None, BenchResult]] = [(i, history.get(i).result) for i in args.ids]
    comparisons = compare_many(items)
    if args.json:
        print_json([c.to_dict() for c in comparisons])
    else:
        print(render_text(comparisons))
    return 0


def cmd_history_tag(args: argparse.Namespace) -> int:
    """Tag a result."""
    with HistoryStore() as history:
        history.tag(args.id, args.tag)
    return 0


def cmd_history_note(args: argparse.Namespace) -> int:
    """Set a result's note."""
    with HistoryStore() as history:
        history.note(args.id, args.text)
    return 0


def cmd_history_delete(args: argparse.Namespace) -> int:
    """Delete a result."""
    with HistoryStore() as history:
        history.delete(args.id)
    print(f"deleted #{args.id}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    """Benchmark at each cap on the profile's GPUs, restore the original caps, print the community's table."""
    profile = store().get(args.name)
    suite = load_suite(args.suite)
    spec = prepare_sweep(
        profile,
        parse_caps(args.caps),
        suite,
        gpus=(args.gpu,) if args.gpu is not None else None,
        thermal_wait=_thermal(args),
    )
    sweep = run_sweep_job(spec, printer_for(suite))
    print(sweep_table(sweep))
    knee = sweep.recommended_cap()
    if knee is not None:
        print(f"recommended cap: {knee:.0f} W (lowest cap within 5 % of the best throughput)")
    if sweep.error:
        print(f"error: {sweep.error}", file=sys.stderr)
        return 1
    return 130 if sweep.cancelled else 0


def cmd_ab(args: argparse.Namespace) -> int:
    """Launch the profile without, then with, its speculative config (or ``--against`` OTHER, then the
    profile); print a verdict per prompt."""
    import json

    from llm_dyno.core.bench.ab import ab_to_dict, verdict_lines

    profile = store().get(args.name)
    against = store().get(args.against) if args.against else None
    suite = _suite(args)
    if args.rounds < 1:
        raise DynoError(f"--rounds must be at least 1, got {args.rounds}")
    spec = prepare_ab(profile, suite, rounds=args.rounds, thermal_wait=_thermal(args), against=against)
    what = "spec-decode A/B" if against is None else f"A/B of {against.name} (A) against"
    print(
        f"{what} {profile.name} with suite {suite.name} "
        f"({suite.warmups} warm-ups, {suite.runs} runs): two launches, one after the other",
        flush=True,
    )
    outcome = run_ab(spec, printer_for(suite))
    ab = outcome.ab
    names = (against.name, profile.name) if against is not None else None
    if args.json:
        text = json.dumps(ab_to_dict(ab, names), indent=2, default=str) + "\n"
        write_export(Path(args.json), text, "the --json file")
    labels = names or ("without spec decoding", "with spec decoding")
    for label, result, rid in (
        (labels[0], ab.without_spec, outcome.result_ids[0]),
        (labels[1], ab.with_spec, outcome.result_ids[1]),
    ):
        if result.all_runs():
            saved = f" (saved as #{rid})" if rid is not None else ""
            print(f"{label}: {markdown_line(result)}{saved}")
            print(f"  {roofline_summary(result)}")
    for line in verdict_lines(ab, names) if names else verdict_lines(ab):
        print(line)
    errors = [r.error for r in (ab.without_spec, ab.with_spec) if r.error]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0
