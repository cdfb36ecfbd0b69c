"""``llm-dyno export bench ID|tune ID --format F``, and the ``--json FILE`` / ``--csv FILE`` … flags of
``bench`` and ``tune``: both read the result-export registry (:mod:`llm_dyno.core.exports.registry`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import DynoError, at
from llm_dyno.core.exports.registry import ResultKind, Subject, export_text, formats_for, write_result

_WHAT = {ResultKind.BENCH: "the result", ResultKind.TUNE: "the record and the analysis"}


def add_export_flags(parser: argparse.ArgumentParser, kind: ResultKind) -> None:
    """One ``--NAME FILE`` flag per registered format that takes ``kind`` (``--json``, ``--csv`` …)."""
    for name, fmt in formats_for(kind).items():
        parser.add_argument(
            f"--{name}", metavar="FILE", dest=f"export_{name}",
            help=f"write {_WHAT.get(kind, 'it')} as {fmt.title} ({fmt.suffix})",
        )  # fmt: skip


def asked_exports(args: argparse.Namespace, kind: ResultKind) -> dict[str, Path]:
    """The formats given as flags (see :func:`add_export_flags`), name -> file."""
    out = {}
    for name in formats_for(kind):
        value = getattr(args, f"export_{name}", None)
        if value:
            out[name] = Path(value)
    return out


def write_asked(args: argparse.Namespace, kind: ResultKind, subject: Subject) -> None:
    """Write ``subject`` in every format given as a flag."""
    for name, path in asked_exports(args, kind).items():
        write_result(path, name, subject, f"the --{name} file")


def register(sub: Any) -> None:
    """Add ``export`` to the CLI."""
    e = sub.add_parser("export", help="write a stored benchmark result or tune in a format of your choice")
    es = e.add_subparsers(dest="export_kind", metavar="KIND", required=True)
    for kind, target, meaning in (
        (ResultKind.BENCH, "id", "the result's number (llm-dyno history list)"),
        (ResultKind.TUNE, "id", "the tune's id (printed at its end; the record's file name)"),
    ):
        formats = formats_for(kind)
        p = es.add_parser(kind.value, help=f"a stored {kind.value} result")
        p.add_argument(target, help=meaning)
        p.add_argument(
            "--format", choices=list(formats), required=True,
            help="; ".join(f"{k}: {f.title}" for k, f in formats.items()),
        )  # fmt: skip
        p.add_argument("--out", "-o", metavar="FILE", help="the file to write (default: standard output)")
        p.set_defaults(handler=cmd_export, kind=kind)


def _subject(kind: ResultKind, ident: str) -> Subject:
    if kind is ResultKind.BENCH:
        from llm_dyno.core.history.store import HistoryStore

        try:
            number = int(ident)
        except ValueError:
            raise DynoError(
                f"a result's id is a number, not {ident!r}", hint="see llm-dyno history list"
            ) from None
        with HistoryStore() as store:
            return store.get(number).result
    from llm_dyno.core.exports.registry import TuneResult
    from llm_dyno.core.tune.analysis import analyse, profile_values
    from llm_dyno.core.tune.record import load_record, tunes_dir

    path = tunes_dir() / f"{ident}.json"
    if Path(ident).name != ident or not path.is_file():
        known = ", ".join(sorted(p.stem for p in tunes_dir().glob("*.json"))[-5:]) or "none"
        raise DynoError(f"no tune {ident!r}", where=at(tunes_dir()), hint=f"recent tunes: {known}")
    record = load_record(path)
    return TuneResult(
        record, analyse(record, profile_values=profile_values(_profile(record.profile), record))
    )


def _profile(name: str) -> object:
    """The tune's profile when it is still stored (its own knob values judge the knee), else None."""
    from llm_dyno.commands.common import store

    try:
        return store().get(name) if name else None
    except DynoError:
        return None


def cmd_export(args: argparse.Namespace) -> int:
    """Write the stored result in the format asked, to ``--out`` or standard output."""
    subject = _subject(args.kind, args.id)
    if args.out:
        write_result(Path(args.out), args.format, subject, "the --out file")
    else:
        sys.stdout.write(export_text(args.format, subject))
    return 0
