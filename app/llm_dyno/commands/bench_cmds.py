"""``llm-dyno bench``, ``llm-dyno history …``, ``llm-dyno sweep`` and ``llm-dyno ab``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from llm_dyno.commands.common import print_json, store
from llm_dyno.core.bench.ceiling import attach_roofline_for, roofline_summary
from llm_dyno.core.bench.report import markdown_line, prompt_lines, to_csv
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.runner import EventKind, ProgressEvent
from llm_dyno.core.bench.session import run_benchmark
from llm_dyno.core.bench.suite import Suite, load_suite
from llm_dyno.core.bench.sweep import run_sweep, sweep_table
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.compare import compare_many, render_text
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.telemetry import power


def register(sub: Any) -> None:
    """Add ``bench``, ``history`` and ``sweep`` to the CLI."""
    b = sub.add_parser("bench", help="run a benchmark suite against a profile's server or a URL")
    b.add_argument("name", nargs="?", help="profile whose running server to benchmark")
    b.add_argument("--url", help="server URL instead of a profile, e.g. http://127.0.0.1:8000")
    b.add_argument("--model", help="with --url: the served model name")
    _suite_args(b)
    b.add_argument("--runs", type=int, help="measured runs per prompt (default: the suite's)")
    b.add_argument("--warmups", type=int, help="warm-up runs per prompt (default: the suite's)")
    b.add_argument("--json", metavar="FILE", help="write the result as JSON")
    b.add_argument("--csv", metavar="FILE", help="write one CSV row per run")
    b.add_argument("--no-save", action="store_true", help="do not store the result in the history")
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
    s.add_argument("--gpu", type=int, default=0, help="GPU index whose limit to set")
    s.add_argument("--suite", default="quick", help="suite name or file (default: quick)")
    s.set_defaults(handler=cmd_sweep)

    ab = sub.add_parser(
        "ab", help="spec-decode A/B: launch the profile without and with its speculative config, compare"
    )
    ab.add_argument("name", help="profile with a --speculative-config (it must not be running)")
    ab.add_argument("--suite", default="community", help="suite name or file (default: community)")
    ab.add_argument("--runs", type=int, help="measured runs per prompt (default: the suite's)")
    ab.add_argument("--warmups", type=int, help="warm-up runs per prompt (default: the suite's)")
    ab.add_argument("--json", metavar="FILE", help="write both results and the verdicts as JSON")
    ab.add_argument(
        "--rounds", type=int, default=2, metavar="N",
        help="take turns N times (A B A B …, a launch of each side per round; default 2, 1: A then B)",
    )  # fmt: skip
    ab.set_defaults(handler=cmd_ab)


def _suite_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", default="community", help="suite name or file (default: community)")


def profile_url(profile: Profile) -> str:
    """Where a profile's server answers (the launch plan's URL for Docker, host/port for a process)."""
    if profile.runtime == Runtime.DOCKER and profile.docker is not None:
        from llm_dyno.core.runtime.docker_spec import plan_container

        return plan_container(profile).base_url
    engine = profile.engine()
    host = engine.host if engine.host not in (None, "", "0.0.0.0", "::") else "127.0.0.1"  # noqa: S104
    return f"http://{host}:{engine.port or 8000}"


def _target(args: argparse.Namespace) -> tuple[str, str, Profile | None]:
    if args.name:
        profile = store().get(args.name)
        return profile_url(profile), profile.served_model_name, profile
    if not args.url or not args.model:
        raise DynoError("give a profile name, or both --url and --model")
    return args.url, args.model, None


def _printer(event: ProgressEvent) -> None:
    if event.kind == EventKind.MESSAGE:
        print(f"  {event.message}", flush=True)
    elif event.kind == EventKind.RUN_FINISHED and event.run is not None:
        r = event.run
        label = "warm-up" if r.warmup else "run"
        ttft = f"{r.ttft_s:.3f}s" if r.ttft_s is not None else "—"
        acc = (
            f"  accept {r.acceptance.rate * 100:.0f}%"
            if r.acceptance and r.acceptance.rate is not None
            else ""
        )
        print(
            f"  {event.prompt:<10} {label:<7} {event.index}/{event.total}  {r.completion_tokens} tok  "
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
    """Run the suite, print progress and the Markdown line, save to history unless ``--no-save``."""
    url, model, profile = _target(args)
    suite = _suite(args)
    print(
        f"benchmarking {model} at {url} with suite {suite.name} ({suite.warmups} warm-ups, {suite.runs} runs)"
    )
    result = run_benchmark(url, model, suite, profile=profile, progress=_printer)
    attach_roofline_for(result, profile)
    if args.json:
        Path(args.json).write_text(result.to_json() + "\n", encoding="utf-8")
    if args.csv:
        Path(args.csv).write_text(to_csv(result), encoding="utf-8")
    if result.all_runs():
        print(markdown_line(result))
        print("\n".join(prompt_lines(result)))
        print(roofline_summary(result))
    if not args.no_save and result.all_runs():
        with HistoryStore() as history:
            rid = history.add(result)
        print(f"saved as #{rid}")
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 130 if result.cancelled else 0


def cmd_history_list(args: argparse.Namespace) -> int:
    """Print stored results."""
    with HistoryStore() as history:
        entries = history.list(profile=args.profile, suite=args.suite, tag=args.tag)
    if args.json:
        print_json([e.to_dict() for e in entries])
        return 0
    if not entries:
        print("no stored results yet: `llm-dyno bench PROFILE`")
    for e in entries:
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
    print(
        f"#{rid}  suite {result.suite}  model {ctx.get('model')}  at {ctx.get('url')}  {ctx.get('started')}"
    )
    print(
        f"  vLLM {ctx.get('vllm_version') or '?'}  GPU {ctx.get('gpu') or '?'}"
        f"  profile {ctx.get('profile_name')}"
    )
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
    """Benchmark at each cap, restore the original cap, print the community's table."""
    try:
        caps = [float(c) for c in args.caps.split(",") if c.strip()]
    except ValueError:
        raise DynoError(f"--caps must be numbers separated by commas, got {args.caps!r}") from None
    profile = store().get(args.name)
    url, model = profile_url(profile), profile.served_model_name
    suite = load_suite(args.suite)
    reason = power.control_unavailable_reason(args.gpu)
    if reason is not None:
        raise DynoError(reason)
    controller = power.default_controller()
    sweep = run_sweep(
        caps,
        controller,
        lambda cap: run_benchmark(url, model, suite, profile=profile, progress=_printer),
        gpu=args.gpu,
        progress=lambda m: print(m, flush=True),
    )
    print(sweep_table(sweep))
    knee = sweep.recommended_cap()
    if knee is not None:
        print(f"recommended cap: {knee:.0f} W (lowest cap within 5 % of the best throughput)")
    with HistoryStore() as history:
        for point in sweep.points:
            history.add(point.result, tags=("sweep", f"cap-{point.cap_w:.0f}"))
    if sweep.error:
        print(f"error: {sweep.error}", file=sys.stderr)
        return 1
    return 0


def cmd_ab(args: argparse.Namespace) -> int:
    """Launch the profile without, then with, its speculative config; print a verdict per prompt."""
    import json

    from llm_dyno.core.bench.ab import ab_to_dict, run_spec_ab, verdict_lines

    profile = store().get(args.name)
    suite = _suite(args)
    print(
        f"spec-decode A/B of {profile.name} with suite {suite.name} "
        f"({suite.warmups} warm-ups, {suite.runs} runs): two launches, one after the other",
        flush=True,
    )
    if args.rounds < 1:
        raise DynoError(f"--rounds must be at least 1, got {args.rounds}")
    ab = run_spec_ab(profile, suite, progress=_printer, rounds=args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(ab_to_dict(ab), indent=2, default=str) + "\n", encoding="utf-8")
    for label, result in (("without spec decoding", ab.without_spec), ("with spec decoding", ab.with_spec)):
        if result.all_runs():
            print(f"{label}: {markdown_line(result)}")
            print(f"  {roofline_summary(result)}")
    for line in verdict_lines(ab):
        print(line)
    errors = [r.error for r in (ab.without_spec, ab.with_spec) if r.error]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0
