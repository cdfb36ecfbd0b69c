"""``llm-dyno tune``: vary knobs of a profile (or a URL's GPU), benchmark every trial, find the knee."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llm_dyno.commands.bench_cmds import printer_for
from llm_dyno.commands.common import gpu_index, store
from llm_dyno.commands.export_cmds import add_export_flags, write_asked
from llm_dyno.core.bench.runner import DEFAULT_THERMAL_WAIT
from llm_dyno.core.bench.suite import load_suite
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.exports.registry import ResultKind, TuneResult
from llm_dyno.core.jobs.tune_job import run_tune
from llm_dyno.core.jobs.tune_spec import DEFAULT_REPEATS, prepare_tune
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.tune import export
from llm_dyno.core.tune.analysis import TuneAnalysis, analyse, profile_values
from llm_dyno.core.tune.apply import save_tuned_copy
from llm_dyno.core.tune.knobs import parse_vary
from llm_dyno.core.tune.recipes import RECIPES
from llm_dyno.core.tune.record import TrialFinished, TrialStarted, TuneMessage, TuneRecord, load_record


def register(sub: Any) -> None:
    """Add ``tune`` to the CLI."""
    t = sub.add_parser(
        "tune",
        help="vary knobs (flags, env, image, power cap, locked clocks), benchmark each trial, find the knee",
        description="Each --vary KNOB=V1,V2 is a knob and its values; several --vary make the cross "
        "product. Knobs: num_speculative_tokens, any vLLM flag (--max-num-batched-tokens, kv-cache-dtype), "
        "env:NAME, image, power (W), sm_clock / mem_clock (MHz, locked). The GPU's power limit and clocks "
        "are restored afterwards, also on Ctrl-C or an error.",
    )
    t.add_argument("name", nargs="?", help="profile name (or --url and --model)")
    t.add_argument("--vary", action="append", default=[], metavar="KNOB=V1,V2", help="a knob and its values")
    t.add_argument("--recipe", choices=sorted(RECIPES), help="a built-in tune (its knob and values)")
    t.add_argument("--suite", default="community", help="suite name or file (default: community)")
    t.add_argument("--runs", type=int, help="measured runs per prompt and trial (default: the suite's)")
    t.add_argument("--warmups", type=int, help="warm-up runs per prompt and trial (default: the suite's)")
    t.add_argument(
        "--repeats", type=int, default=DEFAULT_REPEATS,
        help=f"times each trial runs, interleaved (A B C A B C; default {DEFAULT_REPEATS}: fewer cannot "
        "tell a difference from noise)",
    )  # fmt: skip
    t.add_argument("--url", help="a running server's URL (GPU knobs only)")
    t.add_argument("--model", help="with --url: the model name to request")
    t.add_argument("--api-key-env", help="with --url: the environment variable holding its API key")
    t.add_argument("--gpu", type=gpu_index, help="with --url: this machine's GPU the server runs on")
    add_export_flags(t, ResultKind.TUNE)
    t.add_argument("--apply", action="store_true", help="save the recommendation as a new profile NAME-tuned")
    t.add_argument("--no-save", action="store_true", help="do not store the trials in the history")
    t.add_argument("--no-thermal-wait", action="store_true", help="do not wait for a stable GPU temperature")
    t.add_argument("--timeout", type=float, default=900.0, help="seconds a variant may take to get ready")
    t.add_argument("--settle", type=float, default=3.0, help="seconds after a cap or clock change")
    t.set_defaults(handler=cmd_tune)


def _target(args: argparse.Namespace) -> Profile | Any:
    if args.name:
        if args.url or args.gpu is not None or args.api_key_env:
            raise DynoError(
                "--url, --gpu and --api-key-env go without a profile name; a profile names its own"
            )
        return store().get(args.name)
    if not args.url or not args.model:
        raise DynoError("give a profile name, or both --url and --model")
    return url_endpoint(args.url, args.model, api_key_env=args.api_key_env)


def _printer(suite_printer: Any) -> Any:
    def show(event: object) -> None:
        if isinstance(event, TuneMessage):
            print(f"  {event.message}", flush=True)
        elif isinstance(event, TrialStarted):
            temp = f", GPU {event.temp_before_c:.0f} °C" if event.temp_before_c is not None else ""
            print(
                f"trial {event.trial.index} [{event.position}/{event.total}, repeat {event.repeat}]: "
                f"{event.trial.label}{temp}",
                flush=True,
            )
        elif isinstance(event, TrialFinished):
            r = event.run
            saved = f", saved as #{r.result_id}" if r.result_id is not None else ""
            error = f", error: {r.error}" if r.error else ""
            print(f"  trial {r.trial} done: {r.completion_tokens} tokens{saved}{error}", flush=True)
        else:
            suite_printer(event)

    return show


def print_analysis(record: TuneRecord, analysis: TuneAnalysis) -> None:
    """The trials table, the knee and its rule, the Pareto front, the recommendation, the post row."""
    print("\n".join(export.markdown_table(analysis)))
    rec = analysis.recommendation
    if rec is None:
        print(f"no recommendation: {analysis.noise or 'no trial produced a throughput'}")
        return
    print(f"knee: trial {rec.trial.index} ({rec.trial.label}) — rule: {analysis.rule}")
    if analysis.pareto:
        print("Pareto front (TPS against W): trials " + ", ".join(str(t) for t in analysis.pareto))
    else:
        print("Pareto front: no GPU power readings")
    print(f"recommendation: {rec.trial.label} ({rec.verdict})")
    for line in rec.evidence:
        print(f"  {line}")
    print(export.post_row(record, analysis))


def cmd_tune(args: argparse.Namespace) -> int:
    """Prepare (refusing bad knobs first), run, print the analysis; exports and the tuned copy on request."""
    target = _target(args)
    suite = load_suite(args.suite).with_counts(runs=args.runs, warmups=args.warmups)
    varies = tuple(parse_vary(v) for v in args.vary)
    spec = prepare_tune(
        target, varies, suite, recipe=args.recipe, repeats=args.repeats, store=not args.no_save,
        gpu=args.gpu, thermal_wait=None if args.no_thermal_wait else DEFAULT_THERMAL_WAIT,
        timeout_s=args.timeout, settle_s=args.settle,
    )  # fmt: skip
    print(
        f"tuning {spec.name}: {len(spec.trials)} trials × {spec.repeats} repeats with suite {suite.name} "
        f"({suite.warmups} warm-ups, {suite.runs} runs; {spec.bench.gpus.label}); record {spec.record_path}",
        flush=True,
    )
    interrupted = False
    try:
        record = run_tune(spec, _printer(printer_for(suite)))
    except KeyboardInterrupt:
        interrupted = True
        record = load_record(spec.record_path)  # saved (restored GPU included) on the way out
    analysis = analyse(record, profile_values=profile_values(spec.profile, record))
    print_analysis(record, analysis)
    for line in record.restored:
        print(f"restored: {line}")
    for line in record.restore_errors:
        print(f"error: could not restore {line}", file=sys.stderr)
    write_asked(args, ResultKind.TUNE, TuneResult(record, analysis))
    if args.apply and spec.profile is not None and analysis.recommendation is not None and not interrupted:
        copy, notes = save_tuned_copy(store(), spec.profile, analysis.recommendation.settings)
        print(f"saved the recommendation as profile '{copy.name}' ('{spec.profile.name}' is unchanged)")
        for note in notes:
            print(f"  note: {note}")
    print(f"tune {record.tune_id} saved: {spec.record_path}")
    if interrupted or record.cancelled:
        return 130
    if (
        record.error
        or record.restore_errors
        or not any(r.result is not None and r.result.all_runs() for r in record.runs)
    ):
        return 1
    return 0
