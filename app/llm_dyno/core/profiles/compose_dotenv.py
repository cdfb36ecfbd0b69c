"""``.env`` and ``env_file:`` files as Docker Compose v2 reads them (compose-go's ``dotenv`` parser),
read behind the bounds an imported file must not get past.

Syntax kept: ``KEY=VALUE`` and ``export KEY=VALUE``, blanks around ``=`` (``456 = ABC``), names with
dots and dashes, a UTF-8 byte-order mark, ``#`` comments (inline ones after a blank), single quotes
(literal, may span lines), double quotes (``\\n``-style escapes, interpolated, may span lines), a bare
``KEY`` (taken from the environment, left out when unset), values interpolated against the
environment and the keys above them.

Bounds (an imported compose file names these files, so they are the file's author's choice, not the
user's): only regular files inside the project folder, never under ``/proc``, ``/sys`` or ``/dev``; at
most :data:`MAX_ENV_FILE_BYTES`, checked before reading and read with that bound; values expand to at
most :data:`~llm_dyno.core.profiles.compose_project.MAX_VALUE_CHARS`. An error names the file and line,
never the file's content (``env_file: /etc/shadow`` must not print its first line).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.model import env_name_problem
from llm_dyno.core.secrets import escape_literal

MAX_ENV_FILE_BYTES = 1 << 20
_SYSTEM_TREES = ("/proc", "/sys", "/dev")
_KEY_RE = re.compile(r"[A-Za-z0-9_.\-\[\]]+")
_ESCAPES = {"a": "\a", "b": "\b", "c": "", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPES |= {"\\": "\\", '"': '"', "$": "$$"}
_SEPARATOR_RE = re.compile(r"[=:]")
_ESCAPE_RE = re.compile(r"\\([abcfnrtv$\"\\]|0[0-7]{0,3})")


class Interpolator(Protocol):
    """What reading an env file needs of the compose file's context (a
    :class:`~llm_dyno.core.profiles.compose_project.ComposeContext`, which reads ``.env`` through
    this module): the variables in force, updated line by line, and Compose's interpolation."""

    variables: dict[str, str]

    def interpolate_counted(self, text: str, where: Location) -> tuple[str, int]:
        """The value interpolated, and how many secret references it kept as written."""
        ...


def is_inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (links resolved) lies in ``folder`` (links resolved) or is it."""
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return real == root or root in real.parents


def read_bounded(path: Path, project: Path | None, where: Location, what: str = "env_file") -> str:
    """The text of an env file, or a clear refusal: outside the project folder, a system tree, not a
    regular file, too large, not UTF-8. Nothing of the file's content goes into a message."""
    name = str(path)
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        raise ImportFormatError(f"{what} {name}: cannot resolve the path", where=where) from None
    if any(str(real) == t or str(real).startswith(t + "/") for t in _SYSTEM_TREES):
        raise ImportFormatError(
            f"{what} {name} is under {str(real).split('/')[1] and '/' + str(real).split('/')[1]}, "
            "which holds system state, not settings; not read",
            where=where,
            hint="write the variables into a file in the project folder",
        )
    if project is not None and not is_inside(real, project):
        raise ImportFormatError(
            f"{what} {name} is outside the project folder {os.path.realpath(project)}; not read (an "
            "imported file may not make the app read files elsewhere)",
            where=where,
            hint="copy the variables into a file inside the project folder and name that one, or "
            "allow it when you trust the file (profile import --allow-env-file-outside)",
        )
    try:
        # O_NOFOLLOW: a link swapped in after the path was resolved is refused, not followed
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(real, flags)
    except OSError as exc:
        raise ImportFormatError(f"{what} {name}: cannot open it ({exc.strerror})", where=where) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ImportFormatError(f"{what} {name} is not a regular file; not read", where=where)
        if info.st_size > MAX_ENV_FILE_BYTES:
            raise ImportFormatError(
                f"{what} {name} is {info.st_size} bytes, over the {MAX_ENV_FILE_BYTES} bytes an env file "
                "may have; not read",
                where=where,
            )
        data = os.read(fd, MAX_ENV_FILE_BYTES + 1)
    except OSError as exc:
        raise ImportFormatError(f"{what} {name}: cannot read it ({exc.strerror})", where=where) from None
    finally:
        os.close(fd)
    if len(data) > MAX_ENV_FILE_BYTES:
        raise ImportFormatError(f"{what} {name} grew past {MAX_ENV_FILE_BYTES} bytes; not read", where=where)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFormatError(
            f"{what} {name}: not UTF-8 text (line {line})", where=Location(name, line)
        ) from None


def _expand_escapes(text: str) -> str:
    """The escapes a double-quoted value expands (compose-go's ``expandEscapes``); ``\\$`` stays a
    literal ``$`` (written ``$$`` for the interpolation that follows)."""
    return _ESCAPE_RE.sub(lambda m: chr(int(g, 8)) if (g := m.group(1))[0] == "0" else _ESCAPES[g], text)


def _quoted(text: str, i: int, quote: str, where: Location) -> tuple[str, int]:
    """The body of a quoted value starting after the quote at ``i``; returns (body, index after).
    A backslash keeps the quote inside the value (``'Let\\'s go!'``); any other stays as written."""
    out: list[str] = []
    j = i + 1
    escaped = False
    while j < len(text):
        c = text[j]
        j += 1
        if c != quote:
            if not escaped and c == "\\":
                escaped = True
                continue
            if escaped:
                escaped = False
                out.append("\\")
            out.append(c)
            continue
        if escaped:
            escaped = False
            out.append(c)
            continue
        body = "".join(out)
        return (_expand_escapes(body) if quote == '"' else body), j
    raise ImportFormatError(
        f"a value opened with {quote} is never closed", where=where, hint=f"close the quote ({quote})"
    )


def parse_env_text(
    text: str,
    source: str,
    ctx: Interpolator,
    environ: Mapping[str, str],
    *,
    escaped: bool,
    raw: bool = False,
) -> dict[str, str]:
    """Parse env-file text; ``ctx`` interpolates (its variables are updated line by line).

    ``escaped``: values for a container's environment, where a literal that reads like a reference is
    stored escaped (``$${foo}``); the ``.env`` of a project feeds interpolation and keeps them plain.
    ``raw``: ``env_file`` with ``format: raw``, values taken as written (quotes kept, nothing filled in).
    """
    out: dict[str, str] = {}
    plain: dict[str, str] = {}
    i, line = 0, 1
    n = len(text)
    while i < n:
        end = text.find("\n", i)
        end = n if end < 0 else end
        row = text[i:end]
        stripped = row.strip()
        where = Location(source, line)
        if not stripped or stripped.startswith("#"):
            i, line = end + 1, line + 1
            continue
        body = stripped.removeprefix("export ").lstrip() if stripped.startswith("export ") else stripped
        m = _SEPARATOR_RE.search(body)  # KEY=VALUE, or the YAML-like KEY: VALUE compose-go also takes
        eq = m.group() if m else ""
        key = (body[: m.start()] if m else body).strip()
        if not _KEY_RE.fullmatch(key):
            raise ImportFormatError(
                f"line {line} is not a KEY=VALUE line", where=where, hint="write NAME=value (one a line)"
            )
        if key.startswith("-"):  # an env_file's names reach env(1) and docker in every export
            raise ImportFormatError(
                f"{env_name_problem(key)}", where=where, hint="rename or remove the variable"
            )
        if not eq:
            if key in environ:  # a bare KEY: the environment's value (left out when unset)
                out[key] = plain[key] = environ[key]
            i, line = end + 1, line + 1
            continue
        # where the value starts in the whole text (a quoted one may run over several lines)
        start = i + row.index(eq) + 1
        while start < end and text[start] in " \t":
            start += 1
        ctx.variables = {**plain, **environ}  # the environment wins, as in Compose
        quote = text[start : start + 1]
        if raw:  # env_file format: raw: the rest of the line as written
            result, kept = text[start:end].rstrip("\r"), 0
            i = end
        elif quote in ("'", '"'):
            value, after = _quoted(text, start, quote, where)
            close = text.find("\n", after)
            close = n if close < 0 else close
            tail = text[after:close].strip()
            if tail and not tail.startswith("#"):
                raise ImportFormatError(
                    f"line {line}: text after the closing quote", where=where, hint="quote the whole value"
                )
            line += text.count("\n", i, close)
            i = close
            if quote == "'":
                result, kept = value, 0
            else:
                result, kept = ctx.interpolate_counted(value, where)
        else:
            value = re.split(r"\s+#", text[start:end], maxsplit=1)[0].strip()
            result, kept = ctx.interpolate_counted(value, where)
            i = end
        plain[key] = result
        out[key] = escape_literal(result) if escaped and not kept else result
        i, line = i + 1, line + 1
    return out
