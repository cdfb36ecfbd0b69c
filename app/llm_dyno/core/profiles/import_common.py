"""What the compose and command-line importers share while they read: the :class:`Draft` they fill,
the exporter's metadata, names made safe, environment names and secret assignments checked, the flags
vLLM knows. :mod:`~llm_dyno.core.profiles.import_result` turns a finished draft into the profile."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.paths import resources_dir
from llm_dyno.core.profiles.model import env_name_problem
from llm_dyno.core.secrets import is_secret_name, secret_value_problem

SourceKind = Literal["compose", "docker-run", "vllm-serve", "profile"]

# Where an exporter keeps the profile fields a compose file or command line has no place for.
META_KEY = "x-llm-dyno"
META_COMMENT = "# llm-dyno:"
_NAME_BAD_RE = re.compile(r"[^A-Za-z0-9._ +-]+")


@functools.lru_cache(maxsize=1)
def known_flags() -> frozenset[str]:
    """Canonical names of the ``vllm serve`` flags of the vLLM version in ``resources/vllm_flags.txt``."""
    path = resources_dir() / "vllm_flags.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(s.strip() for s in text.splitlines() if s.strip() and not s.startswith("#"))


def safe_name(text: str) -> str:
    """Turn a service, container or model name into a valid profile name."""
    name = _NAME_BAD_RE.sub("-", text).strip(" ._+-")[:80].strip()
    return name or "imported"


def checked_env_name(name: str, where: Location) -> str:
    """``name`` when it is an environment variable name a profile keeps; else an
    :class:`ImportFormatError` at ``where`` (a name such as ``-S`` would be read as an option by the
    ``env`` of an exported line, and run what the rest of the name spells)."""
    problem = env_name_problem(name)
    if problem is not None:
        raise ImportFormatError(
            f"environment: {problem}; not imported", where=where, hint="rename or remove the variable"
        )
    return name


def parse_meta_comment(line: str, warnings: list[str]) -> dict[str, Any]:
    """Read the exporter's ``# llm-dyno: {json}`` comment; a damaged one is ignored with a warning."""
    try:
        data = loads_outside(line.strip()[len(META_COMMENT) :], "the '# llm-dyno:' comment")
    except ValueError:
        warnings.append("ignored a damaged '# llm-dyno:' comment line")
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class Draft:
    """A profile being assembled from a source, with where each piece came from."""

    kind: SourceKind
    source: str | None
    argv: list[str] = field(default_factory=list)  # the vllm serve arguments, model included
    argv_where: list[Location] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    docker: dict[str, Any] | None = None
    gpus: Any = None
    where: dict[str, Location] = field(default_factory=dict)  # "docker.shm_size" → its location
    name_hint: str | None = None
    service: str | None = None
    executable: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unset: dict[str, Location] = field(default_factory=dict)  # variables read while unset → where
    file_meta: dict[str, Any] = field(default_factory=dict)  # the source's own x-llm-dyno block, as written

    def unset_note(self) -> str:
        """`` (…is not set…)`` naming the unset variables, for an error that they may have caused."""
        if not self.unset:
            return ""
        names = ", ".join(f"${n}" for n in self.unset)
        return f" ({names} {'is' if len(self.unset) == 1 else 'are'} not set and read as empty)"

    def unset_hint(self, hint: str | None) -> str | None:
        """The hint of an error, preceded by how to set the unset variables when there are some."""
        if not self.unset:
            return hint
        setting = (
            f"set {', '.join(self.unset)} in your environment or in the .env file beside the compose file"
        )
        return f"{setting}; {hint}" if hint else setting

    def loc(self, key: str) -> Location:
        """The location recorded for a profile field (or its nearest parent)."""
        parts = key.split(".")
        while parts:
            found = self.where.get(".".join(parts))
            if found is not None:
                return found
            parts.pop()
        return Location(self.source)


_ASSIGNMENT_RE = re.compile(r"(?<![\w.-])([A-Za-z_][A-Za-z0-9_.-]*)=(\S+)")


def secret_assignment(text: str) -> str | None:
    """``HF_TOKEN=hf…`` or ``DB_PASSWORD=…`` written into a command: a literal under a secret name."""
    for m in _ASSIGNMENT_RE.finditer(text):
        value = m.group(2).strip("'\"")
        if is_secret_name(m.group(1)) and value and secret_value_problem(value) is not None:
            return f"a literal value for {m.group(1)}"
    return None


def loopback_port(mapping: str) -> str:
    """A port mapping as the loopback default publishes it: ``8000:8000`` → ``127.0.0.1:8000:8000``."""
    spec = mapping.split("/")[0]
    if spec.count(":") >= 2 or spec.startswith("["):
        return mapping
    return f"127.0.0.1:{mapping}" if ":" in spec else f"127.0.0.1::{mapping}"
