"""``llm-dyno diagnose`` (explain the gap) and ``llm-dyno reference list|show|profile``."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from llm_dyno.commands.common import print_json, store, warn
from llm_dyno.core.diagnose.apply import apply_finding, fixed_name, free_name
from llm_dyno.core.diagnose.engine import Diagnosis
from llm_dyno.core.diagnose.evidence import Finding
from llm_dyno.core.diagnose.fingerprint import ASK, describe_rows
from llm_dyno.core.diagnose.gather import Gathered, remembered_reference
from llm_dyno.core.diagnose.inputs import Measured, parse_acceptance
from llm_dyno.core.diagnose.post import MAX_POST_BYTES, Post, read_post, read_post_file, with_post
from llm_dyno.core.diagnose.reference_profile import ReferenceComparison, import_reference
from llm_dyno.core.diagnose.references import Reference, find_reference, load_references
from llm_dyno.core.diagnose.sources import reference_from_profile
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.diagnose_job import prepare_diagnose, run_diagnose
from llm_dyno.core.profiles.model import Profile


def _tps(text: str) -> float:
    """A measured tokens/s figure: a finite number above 0 (argparse names the option on refusal)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or not 0 < value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a tokens/s figure (a number above 0 and finite)")
    return value


def _acceptance(text: str) -> tuple[float, ...]:
    """Per-position acceptance rates (argparse names the option on refusal)."""
    try:
        return parse_acceptance(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _mean_length(text: str) -> float:
    """A mean acceptance length: tokens per pass, 1 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a mean acceptance length (tokens per pass: 1 plus the accepted drafts, "
            "e.g. 3.55)"
        )
    return value


def _power_cap(text: str) -> float:
    """A power cap in watts."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of watts") from None
    if not math.isfinite(value) or not 10 <= value <= 2000:
        raise argparse.ArgumentTypeError(f"{text!r} W is not a GPU power cap (10–2000 W)")
    return value


def typed_numbers(args: argparse.Namespace) -> Measured | None:
    """What the user typed (TPS, acceptance, mean length, power cap) as one record; None when nothing."""
    acc: tuple[float, ...] = args.acceptance or ()
    no_spec = getattr(args, "no_spec_tps", None)
    if (
        not args.tps and not acc and args.mean_acceptance_length is None and args.power_cap is None
        and no_spec is None
    ):  # fmt: skip
        return None
    narr, code = args.tps if args.tps else (None, None)
    return Measured(
        narr, code, acc, args.mean_acceptance_length, "typed", power_cap_w=args.power_cap, no_spec_tps=no_spec
    )


def read_post_arg(name: str) -> Post:
    """``--post FILE`` (``-``: standard input), bounded to :data:`MAX_POST_BYTES`."""
    if name == "-":
        text = sys.stdin.buffer.read(MAX_POST_BYTES + 1).decode("utf-8", errors="replace")
        return read_post(text, "(stdin)")
    return read_post_file(Path(name))


def register(sub: Any) -> None:
    """Add ``diagnose`` and ``reference`` to the CLI."""
    d = sub.add_parser("diagnose", help="explain why a server is slower than a reference: ranked findings")
    d.add_argument("name", nargs="?", help="a stored profile (its latest launch log is read)")
    d.add_argument("--url", help="a running server: read /metrics and /version")
    d.add_argument("--reference", metavar="R", help="a reference id or a YAML file")
    d.add_argument("--log", metavar="FILE", help="the server's log to read (default: the profile's latest)")
    d.add_argument(
        "--reference-log", metavar="FILE", help="the reference's boot log, for the side-by-side fingerprint"
    )
    d.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the server's API key")
    d.add_argument(
        "--bench", metavar="FILE", help="a result written by bench --json, instead of the profile's latest"
    )
    d.add_argument(
        "--tps", nargs=2, type=_tps, metavar=("NARR", "CODE"), help="your measured narrative and code TPS"
    )
    d.add_argument(
        "--acceptance", type=_acceptance, metavar="RATES",
        help="your per-position acceptance, percent or fractions: 93,86.6,73.9 (one per draft position)",
    )  # fmt: skip
    d.add_argument(
        "--mean-acceptance-length", type=_mean_length, metavar="L",
        help="your mean acceptance length (tokens per pass, e.g. 3.55) where only that is known",
    )  # fmt: skip
    d.add_argument(
        "--power-cap", type=_power_cap, metavar="W", help="the GPU power cap your numbers were measured at"
    )
    d.add_argument(
        "--no-spec-tps", type=_tps, metavar="TPS",
        help="your narrative TPS without speculative decoding (default: the profile's stored A/B): splits "
        "time per pass into target forward and speculation overhead against the reference's no-spec row",
    )  # fmt: skip
    d.add_argument(
        "--post", metavar="FILE",
        help="a forum post's text (- for stdin): its vLLM lines are read as a log, its figures as typed "
        "(typed options win)",
    )  # fmt: skip
    d.add_argument(
        "--apply", metavar="FINDING_ID",
        help="store a copy of the profile with that finding's change (as the window's 'Apply to a copy')",
    )  # fmt: skip
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(handler=cmd_diagnose)

    r = sub.add_parser("reference", help="list and show reference results to compare against")
    rsub = r.add_subparsers(dest="reference_command", metavar="SUBCOMMAND", required=True)
    ls = rsub.add_parser("list", help="list shipped and user references")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=cmd_reference_list)
    show = rsub.add_parser("show", help="print one reference")
    show.add_argument("ref", help="a reference id or a YAML file")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_reference_show)
    prof = rsub.add_parser(
        "profile", help="import a reference's published compose as a profile (the app's compose importer)"
    )
    prof.add_argument("ref", help="a reference id or a YAML file")
    prof.add_argument("--name", help="the profile's name (default: the reference's id)")
    prof.add_argument("--replace", action="store_true", help="overwrite a profile of that name")
    prof.add_argument("--dry-run", action="store_true", help="print the profile instead of saving it")
    prof.set_defaults(handler=cmd_reference_profile)


def _reference(args: argparse.Namespace, profile: Profile | None) -> Reference | None:
    """``--reference``, else the one last chosen for the profile in the window, else its own numbers."""
    if args.reference:
        return find_reference(args.reference)
    if profile is None:
        return None
    chosen = remembered_reference(profile.name)
    if chosen is not None:
        try:
            return find_reference(chosen)
        except DynoError:
            pass  # a reference file that has gone since: the profile's own numbers then
    return reference_from_profile(profile)


def gather_for(args: argparse.Namespace) -> Gathered:
    """What the command line points at, gathered as the Diagnostics view does: the profile's latest
    launch log (or ``--log``), its latest benchmark from the history, the live server (``--url``),
    typed TPS (``--tps``) and the reference."""
    if not args.name and not args.url and not args.bench and not args.post:
        raise DynoError(
            "name a profile or give --url or --bench",
            hint="llm-dyno diagnose NAME | --url http://host:8000 | --bench result.json",
        )
    profile = store().get(args.name) if args.name else None
    if args.log and not Path(args.log).is_file():
        raise DynoError(f"cannot read the log {args.log}: no such file")
    if args.reference_log and not Path(args.reference_log).is_file():
        raise DynoError(f"cannot read the reference log {args.reference_log}: no such file")
    if args.bench and not Path(args.bench).is_file():
        raise DynoError(f"cannot read the benchmark result {args.bench}: no such file")
    if args.api_key_env and not args.url:
        raise DynoError("--api-key-env goes with --url; a profile names its own key")
    post = read_post_arg(args.post) if args.post else None
    typed, post_notes = with_post(typed_numbers(args), post)
    # a profile's running server (found in the registry, wherever it was launched) is read live too,
    # with its key and its GPUs
    spec = prepare_diagnose(
        profile,
        _reference(args, profile),
        endpoint=url_endpoint(args.url, "", api_key_env=args.api_key_env) if args.url else None,
        log_path=Path(args.log) if args.log else None,
        typed=typed,
        reference_log_path=Path(args.reference_log) if args.reference_log else None,
        bench_path=Path(args.bench) if args.bench else None,
        post=post,
    )
    gathered = run_diagnose(spec)
    if post_notes:
        gathered = replace(gathered, notes=(*gathered.notes, *post_notes))
    if args.url and "live /metrics" not in gathered.sources:
        failed = next((n for n in gathered.notes if n.startswith("live metrics unavailable")), "no answer")
        raise DynoError(f"{args.url}: {failed}", hint="is the server running? (--api-key-env VAR for a key)")
    return gathered


def _finding_lines(label: str, f: Finding) -> list[str]:
    out = [f"{label} [{f.severity.value}] {f.title}  ({f.id}; impact: {f.impact.describe()})"]
    if f.impact.basis:
        out.append(f"   basis: {f.impact.basis}")
    out += [f"   - {e.describe()}" for e in f.evidence]
    out.append(f"   → {f.advice}")
    out += [f"   change: {c.describe()}" for c in f.changes]
    return out


def format_diagnosis(result: Diagnosis) -> str:
    """Findings for a terminal: the performance ranking (rank, severity, title, impact, evidence,
    advice, applicable change), then the security findings apart, then the roofline and its inputs."""
    out: list[str] = []
    if result.split is not None:
        out.append("gap split (TPS = tokens per pass × passes per second):")
        out += [f"  {line}" for line in result.split.lines()]
    if not result.findings:
        out.append("no findings: nothing in the profile, log or metrics explains a gap")
    for i, f in enumerate(result.performance, 1):
        out += _finding_lines(f"{i}.", f)
    if result.security:
        out.append("security (shown apart: not part of the speed ranking):")
        for f in result.security:
            out += _finding_lines("-", f)
    if result.roofline is not None:
        out.append(f"roofline: {result.roofline.describe()}")
        out += [f"   assumed: {a}" for a in result.roofline.assumptions()]
    if result.boot:
        out.append("boot log, yours vs the reference (≠ differs, ? unknown, = same):")
        out += [f"  {line}" for line in describe_rows(result.boot)]
        if any(r.status == "unknown" and r.reference is None for r in result.boot):
            out.append(f"  for the reference's unknown facts: {ASK}")
    if result.causes:
        out.append("causes, most likely first (by the split, then the field's evidence, FIELD_EVIDENCE.md):")
        shown = set(result.ids())
        for c in result.causes:
            see = f" (finding {c.finding})" if c.finding in shown else ""
            out.append(f"  [{c.verdict.value}] {c.title}{see}: {c.reason}")
            out.append(f"      published effect: {c.effect} ({c.sources})")
    if result.answers:
        out.append("questions, answered:")
        for a in result.answers:
            out.append(f"  {a.question} [{a.verdict}]")
            out.append(f"      {a.evidence}")
    for rule, err in result.rule_errors:
        out.append(f"rule {rule} failed: {err}")
    return "\n".join(out)


def format_configuration(c: ReferenceComparison) -> str:
    """The "Configuration against the reference" section: each differing setting (``!`` where it
    matters for decode speed, with why and its source), then what both share (not the difference)."""
    if not c.rows and not c.shared and not c.note:
        return ""
    head = f" (its compose: {c.published})" if c.published else ""
    out = [f"Configuration against the reference{head}:"]
    if c.note:
        out.append(f"  {c.note}")
    if c.published and not c.rows and not c.note:
        out.append("  no setting differs")
    for r in c.rows:
        mark = "!" if r.matters else " "
        out.append(
            f"  {mark} {r.field}: yours {r.yours or '(not set)'} | reference {r.reference or '(not set)'}"
        )
        out.append(f"      {'matters' if r.matters else 'not the difference'}: {r.why} ({r.source})")
    if c.shared:
        out.append("  shared with the reference (not the difference):")
        out += [f"    = {s.describe()}" for s in c.shared]
    return "\n".join(out)


def apply_to_copy(args: argparse.Namespace, gathered: Gathered) -> int:
    """Store the copy with finding ``--apply``'s change under the window's name rule; exit 2 for a
    finding that is unknown or has no change, naming those that have one."""
    if not args.name:
        raise DynoError("--apply needs a stored profile to copy", hint="llm-dyno diagnose NAME --apply ID")
    profile = store().get(args.name)
    applicable = [f.id for f in gathered.diagnosis.findings if f.changes]
    finding = gathered.diagnosis.get(args.apply)
    if finding is None or not finding.changes:
        what = "is not among the findings" if finding is None else "has no change that can be applied"
        listed = ", ".join(applicable) or "none"
        print(f"error: finding {args.apply!r} {what}; findings with a change: {listed}", file=sys.stderr)
        return 2
    name = free_name(fixed_name(profile, finding), store().listing().names())
    copy = apply_finding(profile, finding, name=name)
    path = store().save(copy, replace=False)
    print(f"created profile {copy.name!r} → {path}")
    for c in finding.changes:
        print(f"  change: {c.describe()}")
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Print ranked findings and what they were made from; exit 0 (findings are advice, not errors)."""
    gathered = gather_for(args)
    if args.apply:
        return apply_to_copy(args, gathered)
    if args.json:
        print_json(
            gathered.diagnosis.to_dict()
            | gathered.configuration.to_dict()
            | {"sources": gathered.sources, "notes": gathered.notes}
        )
        return 0
    print(format_diagnosis(gathered.diagnosis))
    section = format_configuration(gathered.configuration)
    if section:
        print(section)
    if args.name:
        for f in gathered.diagnosis.findings:
            if f.changes:
                print(f"apply {f.id} to a copy: this command with --apply {f.id}")
    print(f"read: {', '.join(gathered.sources) or 'nothing'}")
    for note in gathered.notes:
        print(f"note: {note}")
    return 0


def _has_profile(ref: Reference) -> bool:
    return ref.compose is not None or ref.profile is not None


def cmd_reference_list(args: argparse.Namespace) -> int:
    """One line per reference: id, GPU, cap, narrative / code TPS, whether it is a profile, title."""
    refs = load_references()
    if args.json:
        print_json([{"id": r.id, "title": r.title, "file": r.file, "profile": _has_profile(r)} for r in refs])
        return 0
    width = max((len(r.id) for r in refs), default=10)
    for r in refs:
        n, h = r.numbers, r.hardware
        tps = f"{n.narrative_tps or '-'} / {n.code_tps or '-'}"
        cap = f"{h.power_limit_w:.0f} W" if h.power_limit_w else "-"
        kind = "profile" if _has_profile(r) else "figures"
        print(f"{r.id:<{width}}  {tps:>13} TPS  {cap:>6}  {kind:<7}  {r.title}")
    return 0


def _configuration_line(ref: Reference) -> str:
    """Whether the reference is a profile, and where its configuration comes from."""
    if ref.compose is not None:
        src = (
            f", copied from {ref.compose_source.describe()} ({ref.compose_source.url})"
            if ref.compose_source
            else ""
        )
        how = f"import it: llm-dyno reference profile {ref.id}"
        return f"profile: yes, its compose {ref.compose_path()}{src}; {how}"
    if ref.profile is not None:
        return f"profile: yes, inline; import it: llm-dyno reference profile {ref.id}"
    return "profile: no (figures only: no configuration was published)"


def cmd_reference_show(args: argparse.Namespace) -> int:
    """The reference as YAML (or JSON), with whether it is a profile and where its compose comes from."""
    ref = find_reference(args.ref)
    if args.json:
        extra = {
            "file": ref.file,
            "has_profile": _has_profile(ref),
            "compose_file": str(ref.compose_path()) if ref.compose is not None else None,
            "compose_url": ref.compose_source.url if ref.compose_source else None,
        }
        print_json(ref.model_dump(mode="json", by_alias=True) | extra)
    else:
        print(f"# {ref.file}" if ref.file else "", end="\n" if ref.file else "")
        print(f"# {_configuration_line(ref)}")
        print(ref.to_yaml(), end="")
    return 0


def cmd_reference_profile(args: argparse.Namespace) -> int:
    """Import the reference's published configuration as a profile, as ``profile import`` would."""
    ref = find_reference(args.ref)
    result = import_reference(ref, args.name)
    for w in result.warnings:
        warn(w)
    if args.dry_run:
        sys.stdout.write(result.profile.to_yaml())
        return 0
    path = store().save(result.profile, replace=args.replace)  # refuses a name in use without --replace
    print(f"imported reference {ref.id} as profile {result.profile.name!r} → {path}")
    return 0
