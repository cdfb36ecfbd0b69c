"""The Profile: everything needed to reproduce a launch of a vLLM server, nothing more."""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from llm_dyno.core.errors import Location, ProfileError
from llm_dyno.core.profiles.flags import EngineConfig, engine_config, parse_args
from llm_dyno.core.profiles.validation import FieldProblem, problem_of, refuse_secret_arguments
from llm_dyno.core.profiles.yamlio import MAX_VALUE_CHARS, dump, load_with_lines
from llm_dyno.core.secrets import (
    SECRET_FLAG_ENV,
    is_secret_name,
    literal_secret_in_word,
    secret_flag,
    secret_in_text,
    secret_value_problem,
)

SCHEMA_VERSION = 1

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._ +-]{0,79}")
# The environment names a profile keeps: those Compose takes (compose-go's dotenv: letters, digits,
# _ . - [ ]), which Docker passes on, except a leading "-": env(1), sudo and docker read such a word as
# an option, so that an exported line would run what the name spells (``-S`` is ``env --split-string``).
ENV_NAME_RE = re.compile(r"[A-Za-z0-9_.\[\]][A-Za-z0-9_.\-\[\]]*")


def env_name_problem(name: str) -> str | None:
    """Why ``name`` is not an environment variable name a profile keeps, or None when it is one."""
    if ENV_NAME_RE.fullmatch(name):
        return None
    shown = name if len(name) <= 60 else name[:57] + "…"
    if name.startswith("-"):
        return (
            f"{shown!r} is not an environment variable name: it starts with '-', which env and docker "
            "read as an option"
        )
    return (
        f"{shown!r} is not an environment variable name (letters, digits and _ . - [ ], not starting "
        "with '-')"
    )


_SIZE_RE = re.compile(r"^\d+(\.\d+)?\s*([kmgt]i?b?|b)?$", re.IGNORECASE)


class Runtime(StrEnum):
    """How a profile's server runs."""

    DOCKER = "docker"
    PROCESS = "process"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LogSettings(_Frozen):
    """The container's log driver and its options (compose ``logging:``), e.g. json-file rotation."""

    driver: str | None = None
    options: dict[str, str] = Field(default_factory=dict)


class SecretFile(_Frozen):
    """A compose secret (or config): a read-only file in the container at ``target``, with the content of
    a host ``file`` (bound read-only, as Compose binds it) or of an ``environment`` variable read at launch
    (only its name is kept; the launch writes the value into the created container before it starts,
    from memory, as Compose does: it never touches the host's disk)."""

    target: str
    file: str | None = None
    environment: str | None = None
    content: str | None = Field(
        default=None, description="a compose config's inline content: (no secret), written like environment"
    )
    mode: int | None = Field(default=None, ge=0, le=0o7777, description="file mode (environment and content)")
    uid: int | None = Field(default=None, ge=0)
    gid: int | None = Field(default=None, ge=0)

    @field_validator("target")
    @classmethod
    def _target(cls, v: str) -> str:
        if not v.startswith("/") or "\x00" in v or ".." in v.split("/"):
            raise ValueError(f"{v!r}: a secret's target is an absolute path such as /run/secrets/NAME")
        return v

    @field_validator("environment")
    @classmethod
    def _variable(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(f"{v!r} is not an environment variable name")
        return v

    @field_validator("content")
    @classmethod
    def _content(cls, v: str | None) -> str | None:
        problem = None if v is None else content_problem(v)
        if problem is not None:
            raise ValueError(problem)
        return v

    @model_validator(mode="after")
    def _one_source(self) -> SecretFile:
        if [self.file, self.environment, self.content].count(None) != 2:
            raise ValueError(
                "a secret has one of file: (a host file), environment: (a variable name) or content: "
                "(a config's text)"
            )
        if self.file is not None and not self.file.startswith("/"):
            raise ValueError(f"secret file {self.file!r} must be an absolute path")
        return self


def content_problem(text: str) -> str | None:
    """Why an inline config ``content:`` may not be kept in a profile (None: it may): it holds a secret
    (a token's shape, ``HF_TOKEN=…``, a literal ``--api-key`` value), or is too long to store."""
    if len(text) > MAX_VALUE_CHARS:
        return f"a config's content of {len(text):,} characters (at most {MAX_VALUE_CHARS:,})"
    kind = secret_in_text(text)
    if kind is None and literal_secret_in_word(text):
        kind = "a literal --api-key or --hf-token value"
    return None if kind is None else f"the config's content holds {kind}; a profile holds no secrets"


class DriverVolume(_Frozen):
    """A named volume the launch creates before the container, with a volume driver and its options
    (compose top-level ``volumes: {name: {driver:, driver_opts:}}``), as Docker Compose creates it."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    driver: str = Field(min_length=1, pattern=r"^[^\s-][^\s]*$")
    options: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("options")
    @classmethod
    def _no_secret_in_options(cls, v: dict[str, str]) -> dict[str, str]:
        # `docker volume inspect` shows a volume's options to every user of the engine
        for key, value in v.items():
            parts = [(key, value), *(p.partition("=")[::2] for p in re.split(r"[,\s]+", value) if "=" in p)]
            named = next((k for k, part in parts if part and is_secret_name(k)), None)
            if named is not None or secret_in_text(value) is not None:
                raise ValueError(
                    f"driver option {key} holds a secret"
                    + (f" ({named}=…)" if named else "")
                    + "; create the volume yourself and declare it external"
                )
        return v


class ImageVolume(_Frozen):
    """An image's files mounted at ``target`` (compose ``volumes: [{type: image}]``): Docker Engine
    28+ (API 1.48) makes such mounts; the launch checks the engine first."""

    image: str
    target: str = Field(pattern=r"^/")
    subpath: str | None = None
    read_only: bool = False

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        return _image_reference(v)

    @field_validator("subpath")
    @classmethod
    def _subpath(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("/") or ".." in v.split("/")):
            raise ValueError(f"{v!r}: an image subpath is relative, without '..' (Docker refuses others)")
        return v


class ExecHook(_Frozen):
    """A compose lifecycle hook: a command run with ``docker exec`` in the container after it starts
    (``post_start``) or before it stops (``pre_stop``), as Compose 2.30+ runs it. Its environment
    follows the profile's rules: a secret-named value is a reference, filled in when the hook runs."""

    command: tuple[str, ...] = Field(min_length=1)
    user: str | None = None
    working_dir: str | None = None
    environment: dict[str, str] = Field(default_factory=dict)

    @field_validator("environment")
    @classmethod
    def _references(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            name_problem = env_name_problem(key)
            if name_problem is not None:
                raise ValueError(name_problem)
            problem = secret_value_problem(value) if value and is_secret_name(key) else None
            if problem is not None:
                raise ValueError(f"{key} {problem}; store a reference instead, e.g. ${{{key}}}")
        return v


def _image_reference(v: str) -> str:
    if not v.strip() or any(c.isspace() for c in v.strip()) or v.strip().startswith("-"):
        # a leading "-": docker run would read the image as one of its options
        raise ValueError("an image reference such as vllm/vllm-openai:v0.11.0 or repo@sha256:…")
    return v.strip()


class InitHook(ExecHook):
    """A compose ``pre_start`` hook (Compose 2.40+): a one-off container run to completion before the
    service's container starts, from ``image`` (None: the service's own), with the service's volumes
    (``volumes_from``), network and environment plus its own; a status other than 0 stops the launch."""

    image: str | None = None

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        return None if v is None else _image_reference(v)


class DeviceRequestSettings(_Frozen):
    """A device request passed to Docker as written (compose ``deploy…devices``: Compose passes every
    request), besides the NVIDIA GPUs of the profile's ``gpus``, which the app's GPU logic reads."""

    driver: str | None = None
    count: int | None = Field(default=None, ge=-1, description="-1: all the driver's devices")
    device_ids: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = Field(min_length=1)
    options: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _count_or_ids(self) -> DeviceRequestSettings:
        if self.count is not None and self.device_ids:
            raise ValueError("a device request has count or device_ids, not both (Docker refuses both)")
        return self


# The compose lifecycle hooks a Docker profile keeps (``docker.<name>``), in the order they run: init
# containers before the server starts, then docker exec in it once started and before it stops.
HOOKS = ("pre_start", "post_start", "pre_stop")


class DockerSettings(_Frozen):
    """Container settings for the Docker runtime."""

    host: str | None = Field(
        default=None, description="Docker host: None for local, ssh://…, tcp://…, or a context"
    )
    image: str
    container_name: str | None = None
    ports: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    shm_size: str | None = None
    ipc: str | None = None
    entrypoint: tuple[str, ...] | None = None
    runtime: str | None = None
    restart: str | None = None
    bind: Literal["loopback", "file"] = Field(
        default="loopback",
        description="ports written without an address: 'loopback' publishes them on 127.0.0.1 only, "
        "'file' on every interface as Docker Compose and docker run do",
    )
    network: str | None = Field(
        default=None,
        description="network mode (host, none, container:…) or a network to join, created if missing; "
        "None: Docker's default bridge",
    )
    network_aliases: tuple[str, ...] = ()
    project: str | None = Field(default=None, description="the compose project the container belongs to")
    user: str | None = None
    working_dir: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    ulimits: dict[str, str] = Field(default_factory=dict, description="name → 'N' or 'soft:hard'")
    tmpfs: tuple[str, ...] = Field(
        default=(), description="tmpfs mounts: 'PATH' or 'PATH:size=64m,mode=1777'"
    )
    logging: LogSettings | None = None
    secrets: tuple[SecretFile, ...] = Field(
        default=(), description="compose secrets: files in the container (/run/secrets/NAME)"
    )
    driver_volumes: tuple[DriverVolume, ...] = Field(
        default=(), description="named volumes created before the container, with their driver and options"
    )
    image_volumes: tuple[ImageVolume, ...] = Field(
        default=(), description="images' files mounted into the container (Docker Engine 28+, API 1.48)"
    )
    devices: tuple[DeviceRequestSettings, ...] = Field(
        default=(), description="device requests besides the GPUs (gpus:), passed to Docker as written"
    )
    pre_start: tuple[InitHook, ...] = Field(
        default=(), description="init containers run to completion, in order, before the server starts"
    )
    post_start: tuple[ExecHook, ...] = Field(default=(), description="run in the container once started")
    pre_stop: tuple[ExecHook, ...] = Field(default=(), description="run in the container before stop")

    @field_validator("*")
    @classmethod
    def _bounded(cls, v: Any, info: ValidationInfo) -> Any:
        # a label or volume spec the YAML loader would not read back (yamlio.MAX_VALUE_CHARS) is
        # refused here, naming the entry, so that an import never writes a profile that does not load
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, tuple) else [(None, v)]
        for key, text in items:
            if isinstance(key, str) and len(key) > MAX_VALUE_CHARS:
                text = key  # a label's name is stored on the same line as its value
                key = f"{key[:40]}…"
            if isinstance(text, str) and len(text) > MAX_VALUE_CHARS:
                entry = "" if key is None else f"{key}: " if isinstance(key, str) else f"[{key}] "
                raise ValueError(
                    f"{entry}a {info.field_name} value of {len(text):,} characters "
                    f"(at most {MAX_VALUE_CHARS:,}); keep long text in a file of its own"
                )
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        return _image_reference(v)

    @field_validator("shm_size")
    @classmethod
    def _shm(cls, v: str | None) -> str | None:
        if v is not None and not _SIZE_RE.match(str(v).strip()):
            raise ValueError(f"{v!r} is not a size; use e.g. 16gb or 512m")
        return v

    @field_validator("ports")
    @classmethod
    def _ports(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for p in v:
            parts = p.split("/")[0].rsplit(":", 2)
            if not all(x.strip() for x in parts[-2:]) or not parts[-1].split("-")[0].isdigit():
                raise ValueError(f"{p!r} is not a port mapping; use e.g. 8020:8000 or 127.0.0.1:8020:8000")
        return v

    @field_validator("logging")
    @classmethod
    def _logging(cls, v: LogSettings | None) -> LogSettings | None:
        return None if v is not None and not v.driver and not v.options else v  # nothing said: none

    @field_validator("ulimits")
    @classmethod
    def _ulimits(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not re.fullmatch(r"-?\d+(:-?\d+)?", str(value)):
                raise ValueError(f"ulimit {name}: {value!r} is not a number or 'soft:hard'")
        return v

    @property
    def image_digest(self) -> str | None:
        """The ``sha256:…`` digest pinned in the image reference, if any."""
        return self.image.split("@", 1)[1] if "@" in self.image else None


class ProcessSettings(_Frozen):
    """Settings for the local-process runtime (``vllm serve`` on this machine)."""

    executable: str = "vllm"
    cwd: str | None = None


class PowerSettings(_Frozen):
    """GPU power limit to apply before launch, in watts per GPU."""

    limit_w: float | None = Field(default=None, gt=0, le=2000)
    per_gpu_w: dict[int, float] = Field(default_factory=dict)
    restore_on_stop: bool = False

    @field_validator("per_gpu_w")
    @classmethod
    def _per_gpu(cls, v: dict[int, float]) -> dict[int, float]:
        for gpu, watts in v.items():
            if gpu < 0 or not 0 < watts <= 2000:
                raise ValueError(f"GPU {gpu}: {watts} W is not a plausible power limit")
        return v


class ReferenceNumbers(_Frozen):
    """Numbers this profile is compared with (someone's published result)."""

    narrative_tps: float | None = Field(default=None, ge=0)
    code_tps: float | None = Field(default=None, ge=0)
    acceptance_per_position: tuple[float, ...] = ()
    gpu: str | None = None
    power_limit_w: float | None = None
    source: str | None = None
    notes: str = ""


class IdleTimeout(_Frozen):
    """After ``minutes`` without requests (the server's own counters), sleep or stop its server."""

    minutes: float = Field(gt=0, le=7 * 24 * 60)
    action: Literal["sleep", "stop"] = "stop"


class Profile(_Frozen):
    """A saved launch configuration. The engine flags are kept exactly as written, in order."""

    schema_version: int = Field(default=SCHEMA_VERSION, alias="schema")
    name: str
    notes: str = ""
    runtime: Runtime = Runtime.DOCKER
    docker: DockerSettings | None = None
    process: ProcessSettings | None = None
    model: str
    model_flag: bool = Field(
        default=False, description="the model was given as --model rather than positionally"
    )
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    gpus: Literal["all"] | tuple[int, ...] | None = None
    pre_start: str | None = None
    power: PowerSettings | None = None
    reference: ReferenceNumbers | None = None
    sleep_mode: bool = Field(
        default=False, description="launch with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1"
    )
    idle_timeout: IdleTimeout | None = None
    # the typed flags and the args they were read from, by the validator's one parse (see engine())
    _engine: tuple[tuple[str, ...], EngineConfig] | None = PrivateAttr(default=None)

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME_RE.fullmatch(v):  # match() with "$" would accept a trailing newline
            raise ValueError(
                "a name of 1-80 letters, digits, spaces, '.', '_', '+' or '-', "
                "starting with a letter or digit"
            )
        return v

    @field_validator("notes", "pre_start", "args")
    @classmethod
    def _bounded(cls, v: Any) -> Any:
        # what the YAML loader would refuse to read back (yamlio.MAX_VALUE_CHARS) is refused here,
        # so that a save never writes a file that no longer loads
        for text in (v,) if isinstance(v, str) else v or ():
            if isinstance(text, str) and len(text) > MAX_VALUE_CHARS:
                raise ValueError(
                    f"a value of {len(text):,} characters (at most {MAX_VALUE_CHARS:,}); "
                    "keep long text in a file of its own"
                )
        return v

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the model (a Hugging Face id or a path) must not be empty")
        if v.startswith("-"):  # vllm serve would read it as one of its options
            raise ValueError(
                f"the model {v[:60]!r} starts with '-', which vllm serve reads as an option; "
                "write a folder as ./NAME"
            )
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in v.items():
            name_problem = env_name_problem(str(key))
            if name_problem is not None:
                raise ValueError(name_problem)
            text = "" if value is None else str(value)
            if len(text) > MAX_VALUE_CHARS:  # what the YAML loader would not read back
                raise ValueError(
                    f"{key}: a value of {len(text):,} characters (at most {MAX_VALUE_CHARS:,}); "
                    "keep long text in a file of its own"
                )
            problem = secret_value_problem(text) if text and is_secret_name(str(key)) else None
            if problem is not None:
                raise ValueError(
                    f"{key} {problem}; store a reference instead, e.g. ${{{key}}} or keyring:llm-dyno/{key}"
                )
            out[str(key)] = text
        return out

    @field_validator("gpus", mode="before")
    @classmethod
    def _gpus(cls, v: Any) -> Any:
        if isinstance(v, str) and v != "all":
            try:
                return tuple(int(x) for x in v.split(",") if x.strip())
            except ValueError:
                raise ValueError("'all' or a list of GPU indices such as [0, 1]") from None
        return v

    @field_validator("gpus")
    @classmethod
    def _gpu_indices(cls, v: Literal["all"] | tuple[int, ...] | None) -> Any:
        if isinstance(v, tuple):
            wrong = [g for g in v if not 0 <= g <= 255]
            if wrong:
                raise ValueError(f"GPU index {wrong[0]} is out of range: indices are 0 to 255, e.g. [0, 1]")
            twice = sorted({g for g in v if v.count(g) > 1})
            if twice:
                raise ValueError(f"GPU {twice[0]} is named twice: name each GPU once, e.g. [0, 1]")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Profile:
        if self.runtime is Runtime.DOCKER and self.docker is None:
            raise ValueError("a docker profile needs a 'docker' section with at least an image")
        asleep = self.sleep_mode or "--enable-sleep-mode" in self.args
        if self.idle_timeout is not None and self.idle_timeout.action == "sleep" and not asleep:
            raise FieldProblem(
                "idle_timeout: action 'sleep' needs sleep mode; set sleep_mode: true or action: stop",
                loc=("idle_timeout", "action"),
            )
        parsed = parse_args(self.args)  # the one reading of the flags: engine() returns what it gives
        for flag in parsed.flags:
            secret = secret_flag(flag.name)
            problem = secret_value_problem(flag.value) if secret and flag.value is not None else None
            if secret is not None and problem is not None:
                var = SECRET_FLAG_ENV[secret]
                spelled = flag.spelled.split("=", 1)[0]
                raise FieldProblem(
                    f"args[{flag.index}]: {spelled} {problem}; use a reference like ${{{var}}}",
                    loc=("args", flag.index),
                )
        refuse_secret_arguments(self.vllm_argv(), model_words=2 if self.model_flag else 1)
        try:  # the typed flags must read: --max-model-len abc is refused here, wherever it comes from
            self._engine = (self.args, engine_config(self.args, parsed=parsed))
        except ProfileError as exc:
            field = exc.where.field if exc.where is not None else None
            m = re.fullmatch(r"args\[(\d+)\]", field or "")
            raise FieldProblem(
                exc.message, loc=("args", int(m.group(1))) if m else ("args",), hint=exc.hint
            ) from None
        return self

    # ---- derived views -------------------------------------------------------------------------
    def engine(self, source: str | None = None) -> EngineConfig:
        """The typed engine flags (max-model-len, kv-cache-dtype, speculative-config, …), read once when
        the profile was made (``source`` names the file in errors of a profile made without reading)."""
        cached = self._engine  # (a model_copy with other args, made without validation, reads them)
        return (
            cached[1]
            if cached is not None and cached[0] == self.args
            else engine_config(self.args, source=source)
        )

    @property
    def served_model_name(self) -> str:
        """The name clients use in requests: ``--served-model-name`` or else the model."""
        return self.engine().served_model_name or self.model

    def vllm_argv(self) -> list[str]:
        """The arguments after ``vllm serve``: the model (positional or ``--model``) then the flags."""
        head = ["--model", self.model] if self.model_flag else [self.model]
        sleep = ["--enable-sleep-mode"] if self.sleep_mode and "--enable-sleep-mode" not in self.args else []
        return [*head, *self.args, *sleep]

    def server_env(self) -> dict[str, str]:
        """The server's environment overrides: ``env``, and ``VLLM_SERVER_DEV_MODE=1`` with sleep
        mode (vLLM mounts its sleep endpoints only then)."""
        return {**self.env, "VLLM_SERVER_DEV_MODE": "1"} if self.sleep_mode else dict(self.env)

    def content_hash(self) -> str:
        """A stable short hash of what the profile launches (name and notes excluded)."""
        data = self.to_dict()
        for key in ("name", "notes", "reference"):
            data.pop(key, None)
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the file layout (defaults left out)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_defaults=True, exclude_none=True)
        head = {"schema": SCHEMA_VERSION, "name": self.name, "notes": data.pop("notes", None)}
        head["runtime"] = self.runtime.value
        rest = {k: v for k, v in data.items() if k not in ("schema", "name", "runtime")}
        return {k: v for k, v in {**head, **rest}.items() if v is not None}

    def to_yaml(self) -> str:
        """The profile as a YAML document."""
        return dump(self.to_dict())

    def with_changes(self, **changes: Any) -> Profile:
        """A validated copy with some fields replaced (:class:`ProfileError` naming the field when a
        new value is invalid, e.g. ``--name`` with a trailing newline)."""
        data = self.model_dump(by_alias=False)
        data.update(changes)
        try:
            return Profile.model_validate(data)
        except ValidationError as exc:
            problem = problem_of(exc)
            raise ProfileError(problem.message, where=problem.where, hint=problem.hint) from None


def profile_from_data(
    data: Any, *, source: str | None = None, lines: dict[Any, int] | None = None
) -> Profile:
    """Validate plain data as a Profile; errors name the file, line and field."""
    if not isinstance(data, dict):
        raise ProfileError(
            "a profile must be a YAML mapping (name:, model:, runtime: …)", where=Location(source, 1)
        )
    version = data.get("schema", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ProfileError(
            f"profile schema {version!r} is not supported (this version reads schema {SCHEMA_VERSION})",
            where=Location(source, (lines or {}).get(("schema",)), "schema"),
        )
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        problem = problem_of(exc, source=source, lines=lines)
        raise ProfileError(problem.message, where=problem.where, hint=problem.hint) from None


def profile_from_yaml(text: str, source: str | None = None) -> Profile:
    """Parse a profile YAML document; errors name the file, line and field."""
    data, lines = load_with_lines(text, source)
    return profile_from_data(data, source=source, lines=lines)
