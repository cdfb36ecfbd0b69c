"""Compose ``secrets:`` and ``configs:``: the top-level declarations and a service's list, read as Docker
Compose v2 runs them (docker/compose ``pkg/compose/create.go`` ``buildContainerSecretMounts`` /
``buildContainerConfigMounts`` and ``secrets.go``).

A ``file:`` secret is that host file bound read-only at ``/run/secrets/<target or name>`` (``uid``,
``gid`` and ``mode`` are ignored, as Compose ignores them and says so); an ``environment:`` secret is a
file Compose writes into the created container before it starts, with the variable's value, mode
``0444`` unless ``mode:`` says otherwise. The profile keeps the variable's *name* only: the launch
reads the value and writes it from memory. ``external``, ``driver`` and ``template_driver`` are Swarm's
and refused, as Compose refuses them.

A config is the same file at ``/<target or name>`` (a relative target under ``/``): a ``file:`` config
a read-only bind, an ``environment:`` one or an inline ``content:`` one written into the created
container before it starts (mode ``0444``, as Compose's ``injectConfigs`` writes both); all are kept as
the profile's secrets (``docker.secrets``, one mechanism). A content that refers to a secret or holds one
is refused: the text is stored in the profile.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.compose_service import ServiceReader
from llm_dyno.core.profiles.import_common import secret_assignment
from llm_dyno.core.profiles.model import content_problem
from llm_dyno.core.profiles.yamlio import line_for

SECRETS_DIR = "/run/secrets/"
_VARIABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# Where each kind's files go in the container when the target is relative (or absent)
_BASE_DIR = {"secret": SECRETS_DIR, "config": "/"}


def _target(written: str, kind: str = "secret") -> str:
    """Compose's rule: an absolute target as written, else under /run/secrets/ (a secret) or / (a config)."""
    return written if written.startswith("/") else _BASE_DIR[kind] + written


def _mode(value: Any, where: Location) -> int:
    """A file mode: YAML's ``0440`` is the number 288; a string (``"0440"``, and ``0o440``, which YAML
    1.1 reads as a string) is read as octal, as compose-go does."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).lower().removeprefix("0o"), 8)
    except ValueError:
        raise ImportFormatError(f"mode {value!r} is not an octal file mode", where=where) from None


def _id(value: Any, what: str, where: Location) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise ImportFormatError(f"{what} {value!r} is not a number", where=where) from None


def _declaration(s: ServiceReader, name: str, where: Location, kind: str) -> tuple[dict[str, Any], Location]:
    top = f"{kind}s"
    declared = s.top.get(top)
    here = Location(s.draft.source, line_for(s.lines, (top, name)), f"{top}.{name}")
    if not isinstance(declared, dict) or name not in declared:
        raise ImportFormatError(
            f"{kind} '{name}' is not declared under the top-level {top}: (Docker Compose refuses it too)",
            where=where,
            hint=f"declare it: {top}: {{{name}: {{file: ./{name}.txt}}}} or {{environment: VARIABLE}}",
        )
    entry = declared[name]
    if not isinstance(entry, dict):
        raise ImportFormatError(f"{kind} '{name}' must be a mapping (file: or environment:)", where=here)
    for key in ("external", "driver", "template_driver"):
        if entry.get(key):
            raise ImportFormatError(
                f"{kind} '{name}' uses {key}:, which only Swarm provides; Docker Compose refuses it "
                f"outside Swarm (unsupported external {kind}), and so does LLM Dyno",
                where=Location(s.draft.source, line_for(s.lines, (top, name, key)), f"{top}.{name}.{key}"),
                hint=f"give the {kind} a file: or environment: source",
            )
    return entry, here


def _file(s: ServiceReader, name: str, written: str, where: Location, kind: str) -> str:
    path = os.path.expanduser(s.interp(written, where))
    if not Path(path).is_absolute():
        base = s.ctx.base_dir
        if base is None:
            raise ImportFormatError(
                f"{kind} '{name}': file {written!r} is relative, and pasted text has no folder to resolve "
                "it against",
                where=where,
                hint="import the compose file itself, or write an absolute path",
            )
        path = os.path.normpath(base.resolve() / path)
    if not os.path.isfile(path):
        s.draft.warnings.append(
            f"{where}: {kind} file {path} does not exist; the launch will fail until it does "
            "(Docker Compose warns the same)"
        )
    return path


def _content(s: ServiceReader, name: str, written: Any, where: Location) -> str:
    """A config's inline ``content:``, interpolated as Compose interpolates it; refused when it refers
    to a secret or holds one (it is stored in the profile and shown by ``plan``)."""
    if isinstance(written, dict | list) or written is None:
        raise ImportFormatError(f"config '{name}': content: must be text", where=where)
    text, kept = s.ctx.interpolate_counted(str(written), where)
    if kept:
        raise ImportFormatError(
            f"config '{name}': content: refers to a secret, which would be stored in the profile and "
            "shown by plan; not imported",
            where=where,
            hint="declare the config with environment: VARIABLE instead (the launch reads it then)",
        )
    problem = content_problem(text)
    assignment = next((k for k in map(secret_assignment, text.splitlines()) if k), None)
    if problem is None and assignment is not None:  # HF_TOKEN=… written into the text
        problem = f"the config's content holds {assignment}; a profile holds no secrets"
    if problem is not None:
        raise ImportFormatError(
            f"config '{name}': {problem}; not imported",
            where=where,
            hint="move the secret to a variable and declare the config with environment: VARIABLE",
        )
    return text


def read_secrets(s: ServiceReader) -> tuple[dict[str, Any], ...]:
    """The service's ``secrets:`` then ``configs:`` as profile entries (``docker.secrets``), in the
    order written; a later entry for the same target replaces an earlier one, as Compose keeps one
    mount per target."""
    out: dict[str, dict[str, Any]] = {}
    for kind in ("secret", "config"):
        for item, i in s.items(f"{kind}s"):
            entry = _one(s, kind, item, i)
            out[entry["target"]] = entry
    return tuple(out.values())


def _one(s: ServiceReader, kind: str, item: Any, i: int) -> dict[str, Any]:
    """One entry of a service's ``secrets:`` or ``configs:``."""
    key = f"{kind}s"
    where = s.at(key, i)
    long = item if isinstance(item, dict) else {"source": item}
    if not long.get("source"):
        raise ImportFormatError(f"a {kind} needs its source (the declared {kind}'s name)", where=where)
    name = s.text(long["source"], key, i)
    target = _target(s.text(long.get("target") or name, key, i), kind)
    entry, declared_at = _declaration(s, name, where, kind)
    secret: dict[str, Any] = {"target": target}
    if kind == "config" and "content" in entry and not entry.get("environment") and not entry.get("file"):
        secret["content"] = _content(s, name, entry["content"], declared_at)
    if entry.get("environment"):
        variable = s.interp(str(entry["environment"]), declared_at)
        if not _VARIABLE_RE.fullmatch(variable):
            raise ImportFormatError(
                f"{kind} '{name}': environment {variable!r} is not a variable name", where=declared_at
            )
        secret["environment"] = variable
        if variable not in os.environ and variable in s.ctx.variables:
            s.draft.warnings.append(
                f"{declared_at}: {kind} '{name}' reads {variable}, which is set only in the project's "
                f".env; LLM Dyno never stores a secret's value, so export {variable} before launching"
            )
    if "environment" in secret or "content" in secret:  # a file the launch writes: its mode and owner
        if long.get("mode") is not None:
            secret["mode"] = _mode(long["mode"], where)
        for field in ("uid", "gid"):
            if long.get(field) not in (None, ""):
                secret[field] = _id(long[field], f"{kind} {field}", where)
    elif entry.get("file"):
        secret["file"] = _file(s, name, str(entry["file"]), declared_at, kind)
        if any(long.get(k) not in (None, "") for k in ("uid", "gid", "mode")):
            s.draft.warnings.append(
                f"{where}: uid, gid and mode of a file {kind} are ignored (Docker Compose ignores them "
                "too: the file is bound as it is on the host)"
            )
    elif "content" not in secret:
        raise ImportFormatError(
            f"{kind} '{name}' has neither file: nor environment:"
            + (" nor content:" if kind == "config" else ""),
            where=declared_at,
            hint="give it file: PATH or environment: VARIABLE",
        )
    return secret
