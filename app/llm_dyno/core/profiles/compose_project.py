"""Docker Compose's own semantics, in one place: what a compose file means beyond its YAML.

- interpolation (``${X}``, ``${X:-d}``, ``${X-d}``, ``${X:?e}``, ``${X:+v}``, ``$X``, ``$$``) from the
  environment and the ``.env`` file of the project folder (the environment wins, as in Compose);
- ``env_file:`` files (the container's environment, below ``environment:``);
- the project name (top-level ``name:``, ``COMPOSE_PROJECT_NAME``, else the folder's name, normalised);
- relative bind sources resolved against the project folder; named volumes and networks carrying the
  ``<project>_`` prefix unless declared with ``name:`` or ``external: true``.

References to secret-looking variables (``${HF_TOKEN}``, ``$VLLM_API_KEY``) are kept as written and never
replaced by their value: a profile holds references, the value is read at launch.
Where Compose v1 and v2 differ, v2 (compose-spec/compose-go) is followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.compose_dotenv import parse_env_text, read_bounded
from llm_dyno.core.secrets import escape_literal, is_secret_name

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?", re.DOTALL)
# An imported file's values may not grow past this when expanded (a 482-byte .env whose variables
# repeat each other reached 10^9 characters), nor nest ${A:-${B:-…}} deeper than MAX_NESTING.
MAX_VALUE_CHARS = 65536
MAX_NESTING = 32
_PROJECT_BAD_RE = re.compile(r"[^a-z0-9_-]")


@dataclass
class ComposeContext:
    """What a compose file is read against: its folder, the variables, the project name.

    ``unset`` records each variable read while unset (name → where), so that an import that fails
    later can still say which variables it missed.
    """

    base_dir: Path | None
    variables: dict[str, str]
    dotenv: dict[str, str]
    warnings: list[str]
    project: str | None = None
    unset: dict[str, Location] = field(default_factory=dict)
    # the user allowed env_file entries outside the project folder (profile import
    # --allow-env-file-outside; the import dialog's checkbox): still never /proc, devices or FIFOs
    env_files_anywhere: bool = False

    @classmethod
    def load(
        cls, base_dir: Path | None, warnings: list[str], environ: Mapping[str, str] | None = None
    ) -> ComposeContext:
        """Read ``.env`` from ``base_dir`` (if there is one) under the process environment."""
        env = dict(os.environ if environ is None else environ)
        dotenv: dict[str, str] = {}
        if base_dir is not None and (base_dir / ".env").exists():
            dotenv = read_env_file(base_dir / ".env", env, warnings, project=base_dir)
        return cls(base_dir, {**dotenv, **env}, dotenv, warnings)

    def interpolate(self, text: str, where: Location) -> str:
        """Compose's variable substitution of one value."""
        return _Interpolation(self, where).run(text)

    def interpolate_value(self, text: str, where: Location) -> str:
        """:meth:`interpolate` for a value the launch resolves (environment, command, image): a result
        that only reads like a reference (``$${foo}`` → ``${foo}``) is stored escaped, so that launch
        passes ``${foo}`` on instead of resolving it again."""
        out, kept = self.interpolate_counted(text, where)
        return out if kept else escape_literal(out)

    def interpolate_counted(self, text: str, where: Location) -> tuple[str, int]:
        """:meth:`interpolate`, and how many secret references it kept as written."""
        run = _Interpolation(self, where)
        return run.run(text), run.kept

    def resolve_path(self, path: str, where: Location) -> str:
        """A bind source as Compose reads it: relative paths against the project folder."""
        if not path.startswith("."):
            return path
        if self.base_dir is None:
            self.warnings.append(
                f"{where}: relative path {path!r} kept as written (pasted text has no folder to resolve "
                "it against; import the compose file itself)"
            )
            return path
        return os.path.normpath(self.base_dir.resolve() / path)

    def scoped(self, key: str, declared: Any, kind: str, where: Location) -> str:
        """The engine name of a named volume or network: ``name:``, the key if external, else prefixed."""
        if isinstance(declared, dict):
            if declared.get("name"):
                return self.interpolate(str(declared["name"]), where)
            external = declared.get("external")
            if isinstance(external, dict) and external.get("name"):
                return self.interpolate(str(external["name"]), where)
            if external:
                return key
        if self.project is None:
            self.warnings.append(
                f"{where}: {kind} '{key}' keeps its bare name: pasted text has no compose project "
                f"(Compose would call it <project>_{key}; import the file from its folder)"
            )
            return key
        return f"{self.project}_{key}"


class _Interpolation:
    """One value being interpolated (a class only to carry the context and location along)."""

    def __init__(self, ctx: ComposeContext, where: Location) -> None:
        self.ctx, self.where = ctx, where
        self.depth = 0
        self.kept = 0  # secret references kept as written (the result then holds a real reference)

    def run(self, text: str) -> str:
        if self.depth > MAX_NESTING:
            raise ImportFormatError(
                f"variables nested more than {MAX_NESTING} deep", where=self.where, hint="simplify the ${…}"
            )
        out: list[str] = []
        size = 0
        i = 0
        while i < len(text):
            size += len(out[-1]) if out else 0  # each turn appends one piece: count the last one
            self._bound(size)
            if text[i] != "$":
                out.append(text[i])
                i += 1
                continue
            nxt = text[i + 1 : i + 2]
            if nxt == "$":
                out.append("$")
                i += 2
            elif nxt == "{":
                end = _closing_brace(text, i + 1)
                if end < 0:
                    raise ImportFormatError(
                        f"'${{' without a closing '}}' in {text!r}",
                        where=self.where,
                        hint="close the ${…} or write $$",
                    )
                out.append(self._braced(text[i : end + 1], text[i + 2 : end]))
                i = end + 1
            elif m := _NAME_RE.match(text, i + 1):
                out.append(self._value(m.group(), f"${m.group()}"))
                i = m.end()
            else:
                # "$@", "$1" and friends belong to a shell script inside the file: left as written
                out.append("$")
                i += 1
        self._bound(size + (len(out[-1]) if out else 0))
        return "".join(out)

    def _bound(self, size: int) -> None:
        if size > MAX_VALUE_CHARS:
            raise ImportFormatError(
                f"a value expands to more than {MAX_VALUE_CHARS} characters (variables that repeat each "
                "other?); not read",
                where=self.where,
                hint="write the value out, or shorten the variables it refers to",
            )

    def _nested(self, text: str) -> str:
        self.depth += 1
        try:
            return self.run(text)
        finally:
            self.depth -= 1

    def _value(self, name: str, written: str) -> str:
        if is_secret_name(name):
            if name in self.ctx.dotenv and name not in os.environ:
                self.ctx.warnings.append(
                    f"{self.where}: {name} is set in .env; the profile keeps the reference {written} and "
                    "reads its value from your environment (or keyring) at launch, not from .env"
                )
            self.kept += 1
            return written  # a reference stays a reference: the secret is read at launch
        if name not in self.ctx.variables:
            self.ctx.unset.setdefault(name, self.where)
            self.ctx.warnings.append(f"{self.where}: ${name} is not set; read as an empty string")
        return self.ctx.variables.get(name, "")

    def _braced(self, written: str, body: str) -> str:
        m = _BRACED_RE.fullmatch(body)
        if m is None:
            raise ImportFormatError(
                f"invalid variable reference ${{{body}}}",
                where=self.where,
                hint="use ${NAME} or ${NAME:-default}",
            )
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        if op is None or is_secret_name(name):
            return self._value(name, written)
        value = self.ctx.variables.get(name)
        empty = value is None or (value == "" and op.startswith(":"))
        if op in (":-", "-"):
            return self._nested(arg) if empty else str(value)
        if op in (":+", "+"):
            return "" if empty else self._nested(arg)
        if empty:
            raise ImportFormatError(
                f"${{{body}}}: {arg or name + ' is required'}",
                where=self.where,
                hint=f"set {name} in your environment or in the .env file beside the compose file",
            )
        return str(value)


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def read_env_file(
    path: Path,
    environ: Mapping[str, str],
    warnings: list[str],
    *,
    project: Path | None,
    where: Location | None = None,
    escaped: bool = False,
    raw: bool = False,
) -> dict[str, str]:
    """A ``.env`` / ``env_file`` file read as Compose reads it, behind the bounds of
    :mod:`~llm_dyno.core.profiles.compose_dotenv` (``project``: the folder it must lie in)."""
    text = read_bounded(path, project, where or Location(str(path)))
    ctx = ComposeContext(path.parent, dict(environ), {}, warnings)
    return parse_env_text(text, str(path), ctx, environ, escaped=escaped, raw=raw)


def normalize_project_name(name: str) -> str:
    """A project name as Compose v2 makes it: lower case, only ``a-z0-9_-``, starting alphanumeric."""
    return _PROJECT_BAD_RE.sub("", name.lower()).lstrip("_-")


def choose_project(ctx: ComposeContext, top_name: Any, where: Location) -> str | None:
    """The project name: top-level ``name:``, else ``COMPOSE_PROJECT_NAME``, else the folder's name."""
    if top_name:
        raw = ctx.interpolate(str(top_name), where)
    elif ctx.variables.get("COMPOSE_PROJECT_NAME"):
        raw = ctx.variables["COMPOSE_PROJECT_NAME"]
    elif ctx.base_dir is not None:
        raw = ctx.base_dir.resolve().name
    else:
        return None
    name = normalize_project_name(raw)
    return name or None


def is_path_source(source: str) -> bool:
    """Whether a volume source is a host path (else it names a volume): Compose's rule."""
    return source.startswith((".", "/", "~")) or bool(re.match(r"^[A-Za-z]:[\\/]", source))
