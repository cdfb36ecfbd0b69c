"""Benchmark suites: prompts, sampling parameters and run counts, read from YAML files.

Built-in suites live in ``resources/suites/``; the user's own in ``data_dir()/suites/`` (a user suite
of the same name wins). A suite file looks like ``resources/suites/community.yaml``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import DynoError, Location
from llm_dyno.core.paths import data_dir, resources_dir
from llm_dyno.core.profiles.yamlio import Path_, line_for, load_with_lines

ENDPOINTS = ("chat", "completions")
# what a suite measures: the community's prompts run by run (the default), or a workload of
# core/bench/workloads (its settings under the suite's ``workload:`` mapping)
STANDARD = "standard"
KINDS = (STANDARD, "multi-turn", "shared-prefix", "context-sweep")
_TOP_KEYS = {
    "name",
    "kind",
    "workload",
    "description",
    "warmups",
    "runs",
    "endpoint",
    "sampling",
    "extra",
    "prompts",
    "timeout_s",
}
DEFAULT_TIMEOUT_S = 900
# Bounds on the counts a suite (or --runs / --warmups) may ask for: a week of runs is not a benchmark.
MAX_COUNTS = {"runs": 10_000, "warmups": 1_000, "timeout_s": 86_400, "max_tokens": 10_000_000}
_PROMPT_KEYS = {"name", "max_tokens", "messages", "prompt"}
# each workload kind's settings: name → (type, required); ints are counts ≥ 1
_WORKLOAD_KEYS: dict[str, dict[str, tuple[type, bool]]] = {
    STANDARD: {},
    "multi-turn": {"turns": (int, False)},
    "shared-prefix": {"prefix": (str, True), "prefix_repeat": (int, False), "requests": (int, False)},
    "context-sweep": {"contexts": (list, True), "filler": (str, False)},
}
MAX_WORKLOAD_COUNT = 10_000_000


class SuiteError(DynoError):
    """A suite file is missing or malformed."""


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    content: str


@dataclass(frozen=True)
class SuitePrompt:
    """One prompt of a suite: chat ``messages`` or a plain ``prompt`` (completions endpoint)."""

    name: str
    max_tokens: int
    messages: tuple[Message, ...] = ()
    prompt: str | None = None


@dataclass(frozen=True)
class Suite:
    """A benchmark suite. ``sampling`` and ``extra`` are merged into every request body."""

    name: str
    prompts: tuple[SuitePrompt, ...]
    warmups: int = 3
    runs: int = 5
    endpoint: str = "chat"
    sampling: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str | None = None
    # each request must finish within this many seconds (a stuck or endless stream ends that run)
    timeout_s: int = DEFAULT_TIMEOUT_S
    kind: str = STANDARD
    workload: dict[str, Any] = field(default_factory=dict)  # read by the kind's module

    def with_counts(self, *, runs: int | None = None, warmups: int | None = None) -> Suite:
        """A copy with other run / warm-up counts (the CLI's ``--runs`` / ``--warmups``)."""
        for key, value, least in (("runs", runs, 1), ("warmups", warmups, 0)):
            if value is not None and not least <= value <= MAX_COUNTS[key]:
                raise SuiteError(f"--{key} must be between {least} and {MAX_COUNTS[key]:,}, got {value}")
        return replace(
            self,
            runs=self.runs if runs is None else runs,
            warmups=self.warmups if warmups is None else warmups,
        )

    def request_body(self, prompt: SuitePrompt, model: str) -> dict[str, Any]:
        """The JSON body of one streamed request for ``prompt``."""
        body: dict[str, Any] = {"model": model}
        if self.endpoint == "chat":
            body["messages"] = [{"role": m.role, "content": m.content} for m in prompt.messages]
        else:
            body["prompt"] = prompt.prompt or ""
        body["max_tokens"] = prompt.max_tokens
        body.update(self.sampling)
        # deep copy via JSON: the body is handed to other code and must not alias the suite's dicts
        body.update(json.loads(json.dumps(self.extra)))
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description (stored with each result; a standard suite's is unchanged)."""
        kind = {} if self.kind == STANDARD else {"kind": self.kind, "workload": dict(self.workload)}
        return kind | {
            "name": self.name,
            "description": self.description,
            "warmups": self.warmups,
            "runs": self.runs,
            "endpoint": self.endpoint,
            "sampling": dict(self.sampling),
            "extra": json.loads(json.dumps(self.extra)),
            "prompts": [
                {
                    "name": p.name,
                    "max_tokens": p.max_tokens,
                    **({"messages": [m.__dict__ for m in p.messages]} if p.messages else {}),
                    **({"prompt": p.prompt} if p.prompt is not None else {}),
                }
                for p in self.prompts
            ],
        }


def _fail(msg: str, source: str | None, lines: dict[Path_, int], path: Path_) -> SuiteError:
    fld = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in path).replace(".[", "[")
    return SuiteError(
        msg, where=Location(source, line_for(lines, path), fld or None), hint="fix the suite file"
    )


def _int(
    data: dict[str, Any],
    key: str,
    default: int,
    minimum: int,
    src: str | None,
    lines: dict[Path_, int],
    path: Path_,
) -> int:
    value = data.get(key, default)
    top = MAX_COUNTS.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (top and value > top):
        bound = f"an integer ≥ {minimum}" + (f" and ≤ {top:,}" if top else "")
        raise _fail(f"'{key}' must be {bound}, got {str(value)[:40]}", src, lines, (*path, key))
    return value


def _mapping(data: dict[str, Any], key: str, src: str | None, lines: dict[Path_, int]) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise _fail(f"'{key}' must be a mapping", src, lines, (key,))
    return {str(k): v for k, v in value.items()}


def _prompt(raw: Any, i: int, endpoint: str, src: str | None, lines: dict[Path_, int]) -> SuitePrompt:
    path: Path_ = ("prompts", i)
    if not isinstance(raw, dict):
        raise _fail("each prompt must be a mapping with name, max_tokens and messages", src, lines, path)
    unknown = set(raw) - _PROMPT_KEYS
    if unknown:
        raise _fail(f"unknown prompt field(s): {', '.join(sorted(map(str, unknown)))}", src, lines, path)
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail("'name' must be a non-empty string", src, lines, (*path, "name"))
    max_tokens = _int(raw, "max_tokens", 0, 1, src, lines, path)
    messages: list[Message] = []
    raw_messages = raw.get("messages")
    if endpoint == "chat":
        if not isinstance(raw_messages, list) or not raw_messages:
            raise _fail("a chat prompt needs a non-empty 'messages' list", src, lines, (*path, "messages"))
        for j, m in enumerate(raw_messages):
            mpath: Path_ = (*path, "messages", j)
            if (
                not isinstance(m, dict)
                or not isinstance(m.get("role"), str)
                or not isinstance(m.get("content"), str)
            ):
                raise _fail("a message needs string 'role' and 'content'", src, lines, mpath)
            messages.append(Message(m["role"], m["content"]))
    prompt = raw.get("prompt")
    if endpoint == "completions" and not isinstance(prompt, str):
        raise _fail("a completions prompt needs a string 'prompt'", src, lines, (*path, "prompt"))
    return SuitePrompt(
        name=name,
        max_tokens=max_tokens,
        messages=tuple(messages),
        prompt=prompt if isinstance(prompt, str) else None,
    )


def _workload(data: dict[str, Any], kind: str, src: str | None, lines: dict[Path_, int]) -> dict[str, Any]:
    """The ``workload:`` settings of a suite of ``kind``, checked against the kind's keys."""
    settings = _mapping(data, "workload", src, lines)
    known = _WORKLOAD_KEYS[kind]
    for key in sorted(set(settings) - set(known)):
        names = ", ".join(sorted(known)) or "none"
        raise _fail(f"unknown {kind} setting '{key}' (known: {names})", src, lines, ("workload", key))
    for key, (kind_of, required) in known.items():
        path: Path_ = ("workload", key)
        if key not in settings:
            if required:
                raise _fail(f"a {kind} suite needs 'workload.{key}'", src, lines, ("workload",))
            continue
        value = settings[key]
        if kind_of is int:
            _int(settings, key, 1, 1, src, lines, ("workload",))
            if value > MAX_WORKLOAD_COUNT:
                raise _fail(f"'{key}' must be ≤ {MAX_WORKLOAD_COUNT:,}", src, lines, path)
        elif kind_of is str and (not isinstance(value, str) or not value.strip()):
            raise _fail(f"'{key}' must be a non-empty string", src, lines, path)
        elif kind_of is list and (
            not isinstance(value, list)
            or not value
            or any(
                isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_WORKLOAD_COUNT
                for v in value
            )
        ):
            raise _fail(f"'{key}' must be a non-empty list of token counts (integers ≥ 1)", src, lines, path)
    return settings


def suite_from_yaml(text: str, source: str | None = None) -> Suite:
    """Parse a suite; errors name the file, line and field."""
    # a long-context prompt is one long value: suites get room for it (1 MiB a value, 8 MiB a file)
    data, lines = load_with_lines(text, source, max_value_chars=1024 * 1024, max_file_chars=8 * 1024 * 1024)
    if not isinstance(data, dict):
        raise _fail("a suite file must be a mapping (name, prompts, …)", source, lines, ())
    unknown = set(data) - _TOP_KEYS
    if unknown:
        key = sorted(map(str, unknown))[0]
        raise _fail(f"unknown field '{key}' (known: {', '.join(sorted(_TOP_KEYS))})", source, lines, (key,))
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail("'name' must be a non-empty string", source, lines, ("name",))
    endpoint = data.get("endpoint", "chat")
    if endpoint not in ENDPOINTS:
        raise _fail(f"'endpoint' must be one of {', '.join(ENDPOINTS)}", source, lines, ("endpoint",))
    raw_prompts = data.get("prompts")
    if not isinstance(raw_prompts, list) or not raw_prompts:
        raise _fail("'prompts' must be a non-empty list", source, lines, ("prompts",))
    prompts = tuple(_prompt(p, i, endpoint, source, lines) for i, p in enumerate(raw_prompts))
    names = [p.name for p in prompts]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise _fail(f"duplicate prompt name(s): {', '.join(dupes)}", source, lines, ("prompts",))
    description = data.get("description", "")
    kind = data.get("kind", STANDARD)
    if kind not in KINDS:
        raise _fail(
            f"'kind' must be one of {', '.join(KINDS)}, got {str(kind)[:40]}", source, lines, ("kind",)
        )
    if kind != STANDARD and endpoint != "chat":
        raise _fail(f"a {kind} suite runs on the chat endpoint", source, lines, ("endpoint",))
    return Suite(
        name=name,
        prompts=prompts,
        warmups=_int(data, "warmups", 3, 0, source, lines, ()),
        runs=_int(data, "runs", 5, 1, source, lines, ()),
        endpoint=endpoint,
        sampling=_mapping(data, "sampling", source, lines),
        extra=_mapping(data, "extra", source, lines),
        description=str(description or ""),
        source=source,
        timeout_s=_int(data, "timeout_s", DEFAULT_TIMEOUT_S, 1, source, lines, ()),
        kind=kind,
        workload=_workload(data, kind, source, lines),
    )


def builtin_suites_dir() -> Path:
    """The shipped suites folder."""
    return resources_dir() / "suites"


def user_suites_dir() -> Path:
    """The user's suites folder (may not exist)."""
    return data_dir() / "suites"


def available_suites() -> dict[str, Path]:
    """Suite name (file stem) → file; user suites shadow built-in ones of the same name."""
    found: dict[str, Path] = {}
    for folder in (builtin_suites_dir(), user_suites_dir()):
        if folder.is_dir():
            for path in sorted(folder.glob("*.y*ml")):
                found[path.stem] = path
    return found


def load_suite_file(path: Path) -> Suite:
    """Read one suite file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read suite: {exc.strerror}", where=Location(str(path))) from None
    return suite_from_yaml(text, str(path))


def load_suite(name_or_path: str) -> Suite:
    """A suite by name (user first, then built-in) or by file path."""
    path = Path(name_or_path).expanduser()
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return load_suite_file(path)
    suites = available_suites()
    if name_or_path not in suites:
        known = ", ".join(sorted(suites)) or "none"
        raise SuiteError(
            f"no suite named '{name_or_path}' (available: {known})",
            hint=f"add a YAML file to {user_suites_dir()}",
        )
    return load_suite_file(suites[name_or_path])
