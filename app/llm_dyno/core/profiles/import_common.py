"""What the compose and command-line importers share: the result type, the launcher split, the model
extraction, secret scrubbing, flag checks and the final validation that maps errors to the source."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import ValidationError

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.paths import resources_dir
from llm_dyno.core.profiles.flags import engine_config, parse_args
from llm_dyno.core.profiles.model import Profile, Runtime, is_secret_name
from llm_dyno.core.secrets import SECRET_FLAG_ENV, secret_flag, secret_value_problem

SourceKind = Literal["compose", "docker-run", "vllm-serve", "profile"]

# Where an exporter keeps the profile fields a compose file or command line has no place for.
META_KEY = "x-llm-dyno"
META_COMMENT = "# llm-dyno:"
DEFAULT_IMAGE = "vllm/vllm-openai:latest"

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})
_SHELL_C_RE = re.compile(r"^-[a-z]*c[a-z]*$")
_NAME_BAD_RE = re.compile(r"[^A-Za-z0-9._ +-]+")


@dataclass(frozen=True)
class ImportResult:
    """A profile read from a compose file, a ``docker run`` line or a ``vllm serve`` line."""

    profile: Profile
    warnings: tuple[str, ...] = ()
    source_kind: SourceKind = "compose"
    service: str | None = None


@functools.lru_cache(maxsize=1)
def known_flags() -> frozenset[str]:
    """Canonical names of the ``vllm serve`` flags of the vLLM version in ``resources/vllm_flags.txt``."""
    path = resources_dir() / "vllm_flags.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(s.strip() for s in text.splitlines() if s.strip() and not s.startswith("#"))


def launcher_length(tokens: list[str], i: int) -> int:
    """How many tokens from ``i`` spell a vLLM server launcher (``vllm serve``, ``python -m vllm…``), or 0."""
    rest = tokens[i:]
    if len(rest) >= 2 and "vllm" in PurePosixPath(rest[0]).name and rest[1] == "serve":
        return 2
    if len(rest) >= 3 and PurePosixPath(rest[0]).name.startswith("python") and rest[1] == "-m":
        if rest[2] == "vllm.entrypoints.cli.main" and len(rest) >= 4 and rest[3] == "serve":
            return 4
        if rest[2].startswith("vllm.entrypoints"):
            return 3
    return 0


def split_launch(entry: list[str], command: list[str]) -> int:
    """Where the container's argv (entrypoint + command) stops being launcher and starts being vLLM args.

    Docker joins entrypoint and command into one argv, so any split point launches the same thing;
    this picks the one that leaves exactly the ``vllm serve`` arguments after it.
    """
    full = entry + command
    for i in range(len(entry)):
        n = launcher_length(full, i)
        if n:
            return i + n
    if entry and len(full) >= 3 and PurePosixPath(full[0]).name in SHELLS and _SHELL_C_RE.match(full[1]):
        # `sh -c SCRIPT ARG0 "$@"…`: the token after the script becomes $0, the rest are "$@"
        cut = min(4, len(full))
        return cut + launcher_length(full, cut)
    return len(entry) + launcher_length(full, len(entry))


def safe_name(text: str) -> str:
    """Turn a service, container or model name into a valid profile name."""
    name = _NAME_BAD_RE.sub("-", text).strip(" ._+-")[:80].strip()
    return name or "imported"


def parse_meta_comment(line: str, warnings: list[str]) -> dict[str, Any]:
    """Read the exporter's ``# llm-dyno: {json}`` comment; a damaged one is ignored with a warning."""
    try:
        data = json.loads(line.strip()[len(META_COMMENT) :])
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

    def loc(self, key: str) -> Location:
        """The location recorded for a profile field (or its nearest parent)."""
        parts = key.split(".")
        while parts:
            found = self.where.get(".".join(parts))
            if found is not None:
                return found
            parts.pop()
        return Location(self.source)


def _take_model(draft: Draft) -> tuple[str, bool, list[str], list[Location]]:
    args, where = list(draft.argv), list(draft.argv_where)
    while len(where) < len(args):
        where.append(Location(draft.source))
    parsed = parse_args(args)
    if parsed.positionals and parsed.positionals[0][0] == 0:
        return args[0], False, args[1:], where[1:]
    flag = parsed.get("model")
    if flag is not None and flag.value is not None:
        width = 1 if "=" in flag.spelled else 2
        cut = slice(flag.index, flag.index + width)
        del args[cut], where[cut]
        return flag.value, True, args, where
    if parsed.positionals:
        index, model = parsed.positionals[0]
        return model, False, args[:index] + args[index + 1 :], where[:index] + where[index + 1 :]
    raise ImportFormatError(
        "no model found: expected the model as the first argument of vllm serve or as --model",
        where=draft.loc("command"),
        hint="add the model (a Hugging Face id or a path) after 'vllm serve', or pass --model",
    )


def _scrub_secret_flags(args: list[str], warnings: list[str]) -> None:
    """Literal secrets become references; abbreviations of a secret flag (``--api-ke``, which vLLM's
    parser accepts) are written out in full, so that every later check sees them."""
    for flag in parse_args(args).flags:
        secret = secret_flag(flag.name)
        if secret is None:
            continue
        spelled = flag.spelled.split("=", 1)[0]
        value = flag.value
        problem = secret_value_problem(value) if value is not None else None
        if problem is not None:
            value = "${" + SECRET_FLAG_ENV[secret] + "}"
            said = "held a literal secret" if problem == "holds a secret value" else "had a literal default"
            warnings.append(f"{spelled} {said}; replaced it with {value}")
        if spelled != f"--{secret}":
            warnings.append(f"{spelled} is an abbreviation of --{secret}; written out in full")
        if "=" in flag.spelled:
            args[flag.index] = f"--{secret}={value}"
        else:
            args[flag.index] = f"--{secret}"
            if value is not None:
                args[flag.index + 1] = value


def _scrub_secret_env(env: dict[str, str], warnings: list[str]) -> None:
    for key, value in env.items():
        if value and is_secret_name(key) and secret_value_problem(value) is not None:
            env[key] = f"${{{key}}}"
            warnings.append(
                f"{key} held a literal secret; replaced it with ${{{key}}} (set it in your environment "
                "or the keyring, never in a profile)"
            )


def build_result(
    draft: Draft, *, name: str | None, runtime: str | Runtime | None, executable: str | None
) -> ImportResult:
    """Validate a draft into an :class:`ImportResult`; errors point at the source's file, line and field."""
    model, model_flag, args, args_where = _take_model(draft)
    _scrub_secret_flags(args, draft.warnings)
    _scrub_secret_env(draft.env, draft.warnings)
    try:
        engine_config(args)
    except ProfileError as exc:
        m = re.match(r"args\[(\d+)\]", (exc.where.field if exc.where else None) or "")
        where = args_where[int(m.group(1))] if m else Location(draft.source)
        raise ImportFormatError(exc.message, where=where, hint=exc.hint) from None
    known = known_flags()
    if known:
        for flag in parse_args(args).flags:
            if flag.name not in known:
                draft.warnings.append(
                    f"unknown vLLM flag {flag.spelled.split('=', 1)[0]} (not in vLLM 0.32.0); kept"
                )

    meta = draft.meta
    wanted = Runtime(runtime) if runtime is not None else None
    kind_runtime = Runtime.PROCESS if draft.kind == "vllm-serve" else Runtime.DOCKER
    chosen = wanted or Runtime(meta.get("runtime", kind_runtime))
    docker = draft.docker
    if chosen is Runtime.DOCKER and docker is None:
        docker = {"image": DEFAULT_IMAGE}
        draft.warnings.append(f"a vllm serve line names no image; using {DEFAULT_IMAGE}")
    if docker is not None and meta.get("host"):
        docker = {**docker, "host": meta["host"]}
    if chosen is Runtime.PROCESS and docker is not None and draft.kind != "vllm-serve":
        draft.warnings.append("imported as a local process: the container settings were dropped")
        docker = None
    process = None
    if chosen is Runtime.PROCESS:
        process = {"executable": executable or draft.executable or "vllm"}
        if meta.get("cwd"):
            process["cwd"] = meta["cwd"]

    if name is not None:
        profile_name = name
    elif meta.get("name"):
        profile_name = str(meta["name"])
    else:
        basename = PurePosixPath(model.rstrip("/")).name or model
        profile_name = safe_name(draft.name_hint or basename)
    where_from = f"'{draft.source}'" if draft.source else "pasted text"
    service = f", service '{draft.service}'" if draft.service else ""
    notes = meta.get("notes", f"Imported from {where_from} ({draft.kind}{service}).")
    data: dict[str, Any] = {
        "name": profile_name,
        "notes": notes,
        "runtime": chosen.value,
        "docker": docker,
        "process": process,
        "model": model,
        "model_flag": model_flag,
        "args": tuple(args),
        "env": draft.env,
        "gpus": meta.get("gpus", draft.gpus),
    }
    for key in ("power", "reference", "pre_start"):
        if meta.get(key) is not None:
            data[key] = meta[key]
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = Location(draft.source, None, "name") if key == "name" else draft.loc(key)
        raise ImportFormatError(f"{key}: {msg}", where=where) from None
    return ImportResult(profile, tuple(dict.fromkeys(draft.warnings)), draft.kind, draft.service)
