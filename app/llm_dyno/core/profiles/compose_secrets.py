"""Compose ``secrets:``: the top-level declarations and a service's list, read as Docker Compose v2 runs
them (docker/compose ``pkg/compose/create.go`` ``buildContainerSecretMounts`` and ``secrets.go``).

A ``file:`` secret is that host file bound read-only at ``/run/secrets/<target or name>`` (``uid``,
``gid`` and ``mode`` are ignored, as Compose ignores them and says so); an ``environment:`` secret is a
file Compose writes into the created container before it starts, with the variable's value, mode
``0444`` unless ``mode:`` says otherwise. The profile keeps the variable's *name* only: the launch
reads the value and writes it from memory. ``external``, ``driver`` and ``template_driver`` are Swarm's
and refused, as Compose refuses them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.compose_service import ServiceReader
from llm_dyno.core.profiles.yamlio import line_for

SECRETS_DIR = "/run/secrets/"
_VARIABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _target(written: str) -> str:
    """Compose's rule: an absolute target as written, else under /run/secrets/."""
    return written if written.startswith("/") else SECRETS_DIR + written


def _mode(value: Any, where: Location) -> int:
    """A file mode: YAML's ``0440`` is the number 288; a string (``"0440"``, and ``0o440``, which YAML
    1.1 reads as a string) is read as octal, as compose-go does."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).lower().removeprefix("0o"), 8)
    except ValueError:
        raise ImportFormatError(f"secret mode {value!r} is not an octal file mode", where=where) from None


def _id(value: Any, what: str, where: Location) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise ImportFormatError(f"secret {what} {value!r} is not a number", where=where) from None


def _declaration(s: ServiceReader, name: str, where: Location) -> tuple[dict[str, Any], Location]:
    declared = s.top.get("secrets")
    here = Location(s.draft.source, line_for(s.lines, ("secrets", name)), f"secrets.{name}")
    if not isinstance(declared, dict) or name not in declared:
        raise ImportFormatError(
            f"secret '{name}' is not declared under the top-level secrets: (Docker Compose refuses it too)",
            where=where,
            hint=f"declare it: secrets: {{{name}: {{file: ./{name}.txt}}}} or {{environment: VARIABLE}}",
        )
    entry = declared[name]
    if not isinstance(entry, dict):
        raise ImportFormatError(f"secret '{name}' must be a mapping (file: or environment:)", where=here)
    for key in ("external", "driver", "template_driver"):
        if entry.get(key):
            raise ImportFormatError(
                f"secret '{name}' uses {key}:, which only Swarm provides; Docker Compose refuses it "
                "outside Swarm (unsupported external secret), and so does LLM Dyno",
                where=Location(
                    s.draft.source, line_for(s.lines, ("secrets", name, key)), f"secrets.{name}.{key}"
                ),
                hint="give the secret a file: or environment: source",
            )
    return entry, here


def _file(s: ServiceReader, name: str, written: str, where: Location) -> str:
    path = os.path.expanduser(s.interp(written, where))
    if not Path(path).is_absolute():
        base = s.ctx.base_dir
        if base is None:
            raise ImportFormatError(
                f"secret '{name}': file {written!r} is relative, and pasted text has no folder to resolve "
                "it against",
                where=where,
                hint="import the compose file itself, or write an absolute path",
            )
        path = os.path.normpath(base.resolve() / path)
    if not os.path.isfile(path):
        s.draft.warnings.append(
            f"{where}: secret file {path} does not exist; the launch will fail until it does "
            "(Docker Compose warns the same)"
        )
    return path


def read_secrets(s: ServiceReader) -> tuple[dict[str, Any], ...]:
    """The service's ``secrets:`` as profile entries (``docker.secrets``), in the order written; a later
    entry for the same target replaces an earlier one, as Compose keeps one mount per target."""
    out: dict[str, dict[str, Any]] = {}
    for item, i in s.items("secrets"):
        where = s.at("secrets", i)
        long = item if isinstance(item, dict) else {"source": item}
        if not long.get("source"):
            raise ImportFormatError("a secret needs its source (the declared secret's name)", where=where)
        name = s.text(long["source"], "secrets", i)
        target = _target(s.text(long.get("target") or name, "secrets", i))
        entry, declared_at = _declaration(s, name, where)
        secret: dict[str, Any] = {"target": target}
        if entry.get("environment"):
            variable = s.interp(str(entry["environment"]), declared_at)
            if not _VARIABLE_RE.fullmatch(variable):
                raise ImportFormatError(
                    f"secret '{name}': environment {variable!r} is not a variable name", where=declared_at
                )
            secret["environment"] = variable
            if variable not in os.environ and variable in s.ctx.variables:
                s.draft.warnings.append(
                    f"{declared_at}: secret '{name}' reads {variable}, which is set only in the project's "
                    f".env; LLM Dyno never stores a secret's value, so export {variable} before launching"
                )
            if long.get("mode") is not None:
                secret["mode"] = _mode(long["mode"], where)
            for key in ("uid", "gid"):
                if long.get(key) not in (None, ""):
                    secret[key] = _id(long[key], key, where)
        elif entry.get("file"):
            secret["file"] = _file(s, name, str(entry["file"]), declared_at)
            if any(long.get(k) not in (None, "") for k in ("uid", "gid", "mode")):
                s.draft.warnings.append(
                    f"{where}: uid, gid and mode of a file secret are ignored (Docker Compose ignores them "
                    "too: the file is bound as it is on the host)"
                )
        else:
            raise ImportFormatError(
                f"secret '{name}' has neither file: nor environment:",
                where=declared_at,
                hint="give it file: PATH or environment: VARIABLE",
            )
        out[target] = secret
    return tuple(out.values())
