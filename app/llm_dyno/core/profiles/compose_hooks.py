"""Compose lifecycle hooks: ``post_start`` and ``pre_stop`` (Compose 2.30+), each a command Compose runs
with ``docker exec`` in the service's container after it starts or before it stops (docker/compose
pkg/e2e/hooks_test.go: a failing ``post_start`` fails ``up`` with "hook exited with status N"), and
``pre_start`` (Compose 2.40+), each a one-off container of its own (``image``, or the service's) run to
completion before the service starts (docker/compose pkg/compose/pre_start.go).

A hook that asks for ``privileged`` is refused: the app runs no exec and no container with every
capability. So is ``per_replica: true`` on a pre_start hook, which Compose refuses at ``up`` too.
"""

from __future__ import annotations

import shlex
from typing import Any

from llm_dyno.core.errors import ImportFormatError
from llm_dyno.core.profiles.compose_service import ServiceReader
from llm_dyno.core.secrets import is_secret_name


def _environment(s: ServiceReader, raw: Any, *path: str | int) -> dict[str, str]:
    pairs: list[tuple[str, Any]]
    if isinstance(raw, dict):
        pairs = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        pairs = [(k, v if eq else None) for k, eq, v in (str(i).partition("=") for i in raw)]
    else:
        raise ImportFormatError("a hook's environment must be a list or a mapping", where=s.at(*path))
    out: dict[str, str] = {}
    for key, value in pairs:
        if value is None:
            continue  # NAME alone: Compose passes it only when set where it runs
        text = "true" if value is True else "false" if value is False else str(value)
        # a secret's value is kept as written (the reference), as the service's environment keeps it
        out[key] = text if is_secret_name(key) else s.ctx.interpolate_value(text, s.at(*path, key))
    return out


def read_hooks(s: ServiceReader, key: str) -> tuple[dict[str, Any], ...]:
    """A service's ``pre_start``, ``post_start`` or ``pre_stop`` hooks as profile entries
    (``docker.<key>``)."""
    out: list[dict[str, Any]] = []
    for item, i in s.items(key):
        where = s.at(key, i)
        if not isinstance(item, dict) or not item.get("command"):
            raise ImportFormatError(f"a {key} hook needs command: (Compose requires it too)", where=where)
        if item.get("privileged") not in (None, False, "false"):
            raise ImportFormatError(
                f"a privileged {key} hook: LLM Dyno runs no exec or container with every capability",
                where=s.at(key, i, "privileged"),
                hint="drop privileged: (or run the command by hand)",
            )
        raw = item["command"]
        if isinstance(raw, list):
            command = [s.text(c, key, i, "command", j) for j, c in enumerate(raw)]
        else:
            text = s.text(raw, key, i, "command")
            try:
                command = shlex.split(text)  # compose-go splits a string command as a shell would
            except ValueError as exc:
                raise ImportFormatError(
                    f"cannot split the hook's command: {exc}", where=s.at(key, i, "command")
                ) from None
        # the command is passed to docker exec as read here: launch fills nothing in (a $ is the text)
        hook: dict[str, Any] = {"command": tuple(command)}
        if key == "pre_start" and item.get("per_replica") not in (None, False, "false"):
            raise ImportFormatError(
                "per_replica: true on a pre_start hook: Compose refuses it too ('per_replica is not yet "
                "supported'), and LLM Dyno runs one container",
                where=s.at(key, i, "per_replica"),
                hint="remove per_replica: (the hook runs once, before the server starts)",
            )
        names = ("user", "working_dir", "image") if key == "pre_start" else ("user", "working_dir")
        for name in names:
            if item.get(name) not in (None, ""):
                hook[name] = s.text(item[name], key, i, name)
        if item.get("environment"):
            hook["environment"] = _environment(s, item["environment"], key, i, "environment")
        out.append(hook)
    return tuple(out)
