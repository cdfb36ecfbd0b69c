"""A finished import :class:`~llm_dyno.core.profiles.import_common.Draft` made into the profile: the
model taken from the arguments, secrets made references or refused, the file's untrusted metadata
named, a container for a bare ``vllm serve`` line, ports as the export wrote them, and the final
validation, whose errors point at the source's file, line and field."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import ValidationError

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.profiles.exposure import exposure_of
from llm_dyno.core.profiles.flags import engine_config, parse_args
from llm_dyno.core.profiles.import_common import (
    META_KEY,
    Draft,
    SourceKind,
    known_flags,
    loopback_port,
    safe_name,
    secret_assignment,
)
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.profiles.reload_check import require_reload
from llm_dyno.core.profiles.validation import problem_of
from llm_dyno.core.secrets import (
    SECRET_FLAG_ENV,
    is_reference,
    is_secret_name,
    literal_secret_in_word,
    names_secret_flag,
    secret_flag,
    secret_in_text,
    secret_value_problem,
    strip_credentials,
)

DEFAULT_IMAGE = "vllm/vllm-openai:latest"


@dataclass(frozen=True)
class ImportResult:
    """A profile read from a compose file, a ``docker run`` line or a ``vllm serve`` line."""

    profile: Profile
    warnings: tuple[str, ...] = ()
    source_kind: SourceKind = "compose"
    service: str | None = None


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
        "no model found: expected the model as the first argument of vllm serve or as --model"
        + draft.unset_note(),
        where=draft.loc("command"),
        hint=draft.unset_hint(
            "add the model (a Hugging Face id or a path) after 'vllm serve', or pass --model"
        ),
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
    """Literal secrets become ``${KEY}`` references: by the variable's name (``HF_TOKEN``), or by the
    value's shape under any name (an ``hf_…`` token, ``user:password@`` in a proxy URL)."""
    for key, value in env.items():
        if not value or is_reference(value):
            continue
        kind = secret_in_text(value)
        if kind is None and not (is_secret_name(key) and secret_value_problem(value) is not None):
            continue
        env[key] = f"${{{key}}}"
        warnings.append(
            f"{key} held {kind or 'a literal secret'}; replaced it with ${{{key}}} (set it in your "
            "environment or the keyring, never in a profile)"
        )


def _scrub_secret_labels(draft: Draft) -> None:
    """Labels reach Docker as written (anyone who can list containers reads them): a secret-looking
    label is left out, named in a warning without its value."""
    docker = draft.docker
    labels = dict(docker.get("labels") or {}) if docker else {}
    for key, value in list(labels.items()):
        kind = secret_in_text(str(value))
        if kind is not None:
            del labels[key]
            draft.warnings.append(
                f"{draft.loc('docker.labels')}: label {key} held {kind}; left out (labels are readable by "
                "anyone who can list containers)"
            )
    if docker is not None and docker.get("labels"):
        draft.docker = {**docker, "labels": labels}


def _refuse_secret_in_script(draft: Draft, args: list[str], args_where: list[Location]) -> None:
    """A secret written into a script or an argument cannot become a reference there: refused, with
    where it is and what to do, never what it is."""
    scripts: list[tuple[str, Location]] = [
        (draft.meta.get("pre_start") or "", draft.loc("command")),
        (" ".join(map(str, (draft.docker or {}).get("entrypoint") or ())), draft.loc("docker.entrypoint")),
        *zip(args, args_where, strict=False),
    ]
    for key, value in (draft.docker or {}).items():  # the image, volumes, user, …: never a secret's place
        if key not in ("labels", "entrypoint"):
            words = value if isinstance(value, (list, tuple)) else [value]
            scripts += [(w, draft.loc(f"docker.{key}")) for w in words if isinstance(w, str)]
    for text, where in scripts:
        kind = secret_in_text(str(text)) or secret_assignment(str(text))
        if kind is None and literal_secret_in_word(str(text)):
            kind = "a literal --api-key or --hf-token value"
        if kind is not None:
            raise ImportFormatError(
                f"{kind} is written into the command or its script; not imported (a profile holds "
                "references, never secrets)",
                where=where,
                hint="put the secret in your environment (e.g. export HF_TOKEN=…) and write $HF_TOKEN "
                "in its place",
            )


# x-llm-dyno keys an imported file may not set silently: where the server runs and what runs first
_UNTRUSTED_META = ("pre_start", "runtime", "cwd")


def _untrusted_meta(draft: Draft, *, trust_host: bool) -> dict[str, Any]:
    """The file's ``x-llm-dyno`` block without ``host`` (which Docker engine gets the secrets at launch:
    only the user decides, with ``trust_host``), and a warning naming each setting that runs something."""
    meta, warnings = draft.meta, draft.warnings
    if meta.get("host") and not trust_host:
        warnings.append(
            f"{META_KEY}.host ({strip_credentials(str(meta['host']))}) is not taken from an imported file: "
            "it picks the Docker engine that receives your secrets at launch; the profile uses your "
            "local engine (import --docker-host-from-file to take it, or set docker.host yourself)"
        )
        meta = {k: v for k, v in meta.items() if k != "host"}
    named = [k for k in _UNTRUSTED_META if draft.file_meta.get(k)]
    if named:
        warnings.append(
            f"{META_KEY} of the imported file sets {', '.join(named)}: "
            + "; ".join(f"{k} = {str(draft.file_meta[k])[:200]!r}" for k in named)
            + " (check them before launching: they decide what runs and where)"
        )
    return meta


class ImportFailed(ImportFormatError):
    """An import that failed, with the warnings gathered before it did (unset variables, …)."""

    def __init__(self, exc: ImportFormatError, warnings: list[str]) -> None:
        super().__init__(exc.message, where=exc.where, hint=exc.hint)
        self.warnings = tuple(dict.fromkeys(warnings))


def _container_for_serve_line(draft: Draft, model: str, args: list[str]) -> tuple[dict[str, Any], str]:
    """A container that can serve a ``vllm serve`` line: the stock image, its port published, the model
    (a local folder, or the Hugging Face cache) mounted. Returns the docker fields and the model."""
    engine = engine_config(args)
    port = engine.port or 8000
    volumes: list[str] = []
    if model.startswith(("/", "./", "../", "~")):
        host = os.path.abspath(os.path.expanduser(model))
        volumes.append(f"{host}:{host}:ro")
        if host != model:
            draft.warnings.append(f"the model {model} is mounted and read in the container as {host}")
        model = host
    else:
        volumes.append("~/.cache/huggingface:/root/.cache/huggingface")
    draft.warnings.append(
        f"a vllm serve line names no container: using {DEFAULT_IMAGE}, publishing port {port}, mounting "
        f"{volumes[0].split(':')[0]} and requesting "
        + ("every GPU" if draft.gpus is None else "the GPUs named")
    )
    host_flag = engine.host
    if host_flag is not None and host_flag.startswith(("127.", "localhost", "::1")):
        draft.warnings.append(
            f"--host {host_flag}: vLLM listens on loopback inside the container, which a published port "
            "cannot reach; remove --host or use --host 0.0.0.0"
        )
    if draft.gpus is None:
        draft.gpus = "all"
    return {"image": DEFAULT_IMAGE, "ports": (f"{port}:{port}",), "volumes": tuple(volumes)}, model


def _port_warnings(profile: Profile, warnings: list[str]) -> None:
    docker = profile.docker
    if docker is None:
        return
    bare = [p for p in docker.ports if p.split("/")[0].count(":") < 2 and not p.startswith("[")]
    if bare and docker.bind == "loopback" and docker.network != "host":  # host network: none published
        warnings.append(
            f"ports {', '.join(bare)} have no address: Docker Compose and docker run publish them on every "
            "interface; the profile publishes them on 127.0.0.1 only (docker.bind: loopback). "
            "Choose docker.bind: file (import --bind file) to bind them as written"
        )


def _open_warning(profile: Profile, draft: Draft) -> None:
    """What plan will say of a server reachable from the network without a key (ports on 0.0.0.0 or
    ::, docker.bind: file, --host 0.0.0.0, the host's network), said at import too, at the ports."""
    said = exposure_of(profile).open_warning
    if said is not None:
        draft.warnings.append(f"{draft.loc('docker.ports' if profile.docker else 'command')}: {said}")


def build_result(
    draft: Draft,
    *,
    name: str | None,
    runtime: str | Runtime | None,
    executable: str | None,
    bind: str | None = None,
    trust_host: bool = False,
) -> ImportResult:
    """Validate a draft into an :class:`ImportResult`; errors point at the source's file, line and field.

    ``bind``: ``loopback`` (default) or ``file``, how ports without an address are published.
    ``trust_host``: take the file's ``x-llm-dyno.host`` (else dropped with a warning).
    """
    model, model_flag, args, args_where = _take_model(draft)
    kind = secret_in_text(model) or secret_assignment(model)
    if kind is None and names_secret_flag(model):  # odd quoting made one word of a flag and its value
        kind = "a secret flag and its value"
    if kind is not None:  # the model's name also becomes the profile's name
        raise ImportFormatError(
            f"the model holds {kind}; not imported (a profile holds references, never secrets)",
            where=draft.loc("model") if "model" in draft.where else draft.loc("command"),
            hint="name the model by its Hugging Face id or path, without credentials",
        )
    _scrub_secret_flags(args, draft.warnings)
    _scrub_secret_env(draft.env, draft.warnings)
    _scrub_secret_labels(draft)
    draft.meta = _untrusted_meta(draft, trust_host=trust_host)
    _refuse_secret_in_script(draft, args, args_where)
    try:
        engine_config(args)
    except ProfileError as exc:
        m = re.match(r"args\[(\d+)\]", (exc.where.field if exc.where else None) or "")
        where = args_where[int(m.group(1))] if m else Location(draft.source)
        raise ImportFormatError(
            exc.message + draft.unset_note(), where=where, hint=draft.unset_hint(exc.hint)
        ) from None
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
        docker, model = _container_for_serve_line(draft, model, args)
    if docker is not None and bind is not None:
        docker = {**docker, "bind": bind}
    elif docker is not None and meta.get("bind") in ("loopback", "file"):
        docker = {**docker, "bind": meta["bind"]}
    restored = False
    if docker is not None and isinstance(meta.get("ports"), list):
        ports = _ports_as_written(docker.get("ports", ()), meta["ports"])
        restored = ports != tuple(docker.get("ports", ()))
        docker = {**docker, "ports": ports}
    if docker is not None and meta.get("host"):
        docker = {**docker, "host": meta["host"]}
    if docker is not None and meta.get("project") and not docker.get("project"):
        docker = {**docker, "project": str(meta["project"])}
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
        problem = problem_of(exc)
        key = problem.field or ""
        where = Location(draft.source, None, "name") if key == "name" else draft.loc(key)
        raise ImportFormatError(
            f"{key}: {problem.message}{draft.unset_note()}", where=where, hint=problem.hint
        ) from None
    require_reload(profile, draft.loc)
    if not restored:  # our own export already showed the loopback bind
        _port_warnings(profile, draft.warnings)
        _open_warning(profile, draft)
    return ImportResult(profile, tuple(dict.fromkeys(draft.warnings)), draft.kind, draft.service)


def _ports_as_written(ports: Any, written: list[Any]) -> tuple[str, ...]:
    """An export writes the ports as they are published (``127.0.0.1:…``) and what the profile says in
    its metadata: the profile's text comes back when the two still agree (the file was not edited)."""
    current = tuple(str(p) for p in ports)
    original = tuple(str(p) for p in written)
    if len(current) == len(original) and all(
        c == o or c == loopback_port(o) for c, o in zip(current, original, strict=True)
    ):
        return original
    return current
