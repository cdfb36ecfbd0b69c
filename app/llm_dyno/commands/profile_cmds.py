"""``llm-dyno profile …``: list, show, import, export, diff, validate, set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from llm_dyno.commands.common import print_json, store, warn
from llm_dyno.core.bounded_read import MAX_IMPORT_BYTES, read_text_capped
from llm_dyno.core.errors import DynoError, Location, StoreError
from llm_dyno.core.profiles import export_formats
from llm_dyno.core.profiles.edit import set_optional_flag
from llm_dyno.core.profiles.flags import canonical_name
from llm_dyno.core.profiles.model import Runtime, profile_from_yaml
from llm_dyno.core.textsafe import whole_lines


def register(sub: Any) -> None:
    """Add ``profile`` and its subcommands to the CLI."""
    p = sub.add_parser("profile", help="list, show, import, export, diff and validate profiles")
    psub = p.add_subparsers(dest="profile_command", metavar="SUBCOMMAND", required=True)

    ls = psub.add_parser("list", help="list the stored profiles")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(handler=cmd_list)

    show = psub.add_parser("show", help="print one profile")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_show)

    imp = psub.add_parser("import", help="import a compose file, `docker run` or `vllm serve` line")
    imp.add_argument("file", help="the file to import, or - for standard input")
    imp.add_argument("--name", help="name of the new profile")
    imp.add_argument("--service", help="compose service to import (default: the one running vLLM)")
    imp.add_argument("--runtime", choices=[r.value for r in Runtime], help="override the detected runtime")
    imp.add_argument("--executable", help="for the process runtime: the vllm executable")
    imp.add_argument(
        "--bind",
        choices=["loopback", "file"],
        help="ports written without an address: publish on 127.0.0.1 only (loopback, the default) "
        "or on every interface as in the file (file)",
    )
    imp.add_argument(
        "--docker-host-from-file",
        action="store_true",
        help="take the Docker engine the file names (x-llm-dyno host, docker -H): that engine receives "
        "your secrets at launch (without this option it is dropped with a warning)",
    )
    imp.add_argument(
        "--allow-env-file-outside",
        action="store_true",
        help="read env_file: entries outside the compose file's folder (without this option they are "
        "refused; /proc, /sys, /dev, FIFOs and devices stay refused, and secrets still become references)",
    )
    imp.add_argument("--replace", action="store_true", help="overwrite a profile of the same name")
    imp.add_argument("--dry-run", action="store_true", help="print the profile instead of saving it")
    imp.set_defaults(handler=cmd_import)

    exp = psub.add_parser("export", help="print a profile as a compose file or a docker run line")
    exp.add_argument("name")
    exp.add_argument(
        "--format", choices=list(export_formats.EXPORT_FORMATS), default="compose",
        help="; ".join(f"{k}: {f.description}" for k, f in export_formats.EXPORT_FORMATS.items()),
    )  # fmt: skip
    exp.set_defaults(handler=cmd_export)

    diff = psub.add_parser("diff", help="semantic difference between two profiles")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.add_argument("--json", action="store_true")
    diff.set_defaults(handler=cmd_diff)

    val = psub.add_parser("validate", help="check a profile file without storing it")
    val.add_argument("file")
    val.set_defaults(handler=cmd_validate)

    st = psub.add_parser("set", help="change engine flags of a stored profile (checked before it is saved)")
    st.add_argument("name")
    st.add_argument(
        "flags", nargs="+", metavar="FLAG=VALUE",
        help="e.g. max-model-len=32768 kv-cache-dtype=fp8 (after --, flags may keep their dashes: "
        "-- --max-model-len=32768); an empty value removes the flag",
    )  # fmt: skip
    st.set_defaults(handler=cmd_set)


def cmd_list(args: argparse.Namespace) -> int:
    """Print the stored profiles; broken files are reported on stderr and skipped."""
    listing = store().listing()  # the index's fields: no profile is parsed unless its file changed
    for err in listing.errors:
        warn(str(err))
    rows = [item.entry.summary() | {"file": str(item.path)} for item in listing.entries if item.entry]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no profiles yet: `llm-dyno profile import FILE`, or open the window to add the examples")
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        where = r["image"] or r["model"]
        print(f"{r['name']:<{width}}  {r['runtime']:<7}  {where}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Print one profile as YAML (or JSON)."""
    profile = store().get(args.name)
    if args.json:
        print_json(profile.to_dict())
    else:
        sys.stdout.write(profile.to_yaml())
    return 0


def _read_input(file: str) -> tuple[str, str]:
    """The text to import, at most MAX_IMPORT_BYTES (a compose file or a command line is kilobytes)."""
    if file == "-":
        data = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
        if len(data) > MAX_IMPORT_BYTES:
            raise DynoError(f"the input on stdin is more than {MAX_IMPORT_BYTES:,} bytes: too big to import")
        return data.decode("utf-8", errors="replace"), "<stdin>"
    return read_text_capped(Path(file), MAX_IMPORT_BYTES, "the file to import"), file


def _base_dir(file: str) -> Path | None:
    """The folder of an imported file: a compose project's folder (its .env, relative paths, name)."""
    return None if file == "-" else Path(file).resolve().parent


def cmd_import(args: argparse.Namespace) -> int:
    """Import a compose file or a command line as a new profile."""
    from llm_dyno.core.profiles.importers import ImportFailed, import_text

    text, source = _read_input(args.file)
    try:
        result = import_text(
            text,
            source=source,
            name=args.name,
            service=args.service,
            runtime=args.runtime,
            executable=args.executable,
            base_dir=_base_dir(args.file),
            bind=args.bind,
            trust_host=args.docker_host_from_file,
            env_file_outside=args.allow_env_file_outside,
        )
    except ImportFailed as exc:
        for w in exc.warnings:  # e.g. the unset variables that made the import fail
            warn(w)
        raise
    for w in result.warnings:
        warn(w)
    if args.dry_run:
        sys.stdout.write(result.profile.to_yaml())
        return 0
    st = store()
    if st.exists(result.profile.name) and not args.replace:
        raise StoreError(
            f"a profile named {result.profile.name!r} already exists",
            where=Location(str(st.path_for(result.profile.name)), None, "name"),
            hint="pass --name NEW to import under another name, or --replace to overwrite it",
        )
    path = st.save(result.profile, replace=args.replace)  # under the store's lock: one of a race wins
    print(f"imported {result.source_kind} as profile {result.profile.name!r} → {path}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Print a profile in another format."""
    text = export_formats.export_profile(store().get(args.name), args.format)
    with whole_lines():  # a file or command to paste: never cut (sanitised all the same)
        sys.stdout.write(text)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    """Print the semantic difference between two profiles; exit 1 when they differ."""
    from llm_dyno.core.profiles.diff import diff_profiles

    st = store()
    d = diff_profiles(st.get(args.a), st.get(args.b))
    if args.json:
        print_json(d.to_dict())
        return 0 if d.is_empty else 1
    if d.is_empty:
        print(f"{args.a} and {args.b} launch the same server")
        return 0
    group = None
    for row in d.rows:
        if row.group != group:
            group = row.group
            print(f"[{group}]")
        left = "—" if row.left is None else row.left
        right = "—" if row.right is None else row.right
        print(f"  {row.kind:<8} {row.key}: {left} → {right}")
    return 1


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a profile file; exit 0 and a summary when it is valid."""
    text, source = _read_input(args.file)
    profile = profile_from_yaml(text, source=source)
    print(f"{source}: valid profile {profile.name!r} ({profile.runtime.value}, model {profile.model})")
    return 0


def cmd_set(args: argparse.Namespace) -> int:
    """Change engine flags in place (the user's spelling and order kept) through ``with_changes``, the
    check every front end uses: a bad value is refused with the field and nothing is written."""
    st = store()
    profile = st.get(args.name)
    flags = profile.args
    names: list[str] = []
    for item in args.flags:
        name, eq, value = item.partition("=")
        flag = canonical_name("--" + name.strip().lstrip("-")) if name.strip() else ""
        if not eq or not flag:
            raise DynoError(
                f"profile set: {item!r} is not FLAG=VALUE",
                hint="e.g. max-model-len=32768 (an empty value removes the flag: max-model-len=)",
            )
        flags = set_optional_flag(flags, flag, value)
        names.append(("--" if value.strip() else "removed --") + flag)
    changed = profile.with_changes(args=flags)
    path = st.save(changed, replace=True)
    print(f"profile {changed.name!r}: {', '.join(names)} → {path}")  # names only: a value may be a secret
    return 0
