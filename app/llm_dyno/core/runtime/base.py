"""One Runtime interface for every backend: plan (pure), launch, observe, stop, adopt.

A backend (Docker, local process) turns a :class:`~llm_dyno.core.profiles.model.Profile` into a
:class:`LaunchPlan` without side effects, then launches it and returns a :class:`ServerHandle` whose
state machine is driven by the server's log lines and its HTTP readiness.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from llm_dyno.core.endpoint import Endpoint, KeyReference, key_reference
from llm_dyno.core.profiles.exposure import Exposure, api_key_reference
from llm_dyno.core.profiles.flags import EngineConfig
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.gpu_hold import GpuHold
from llm_dyno.core.runtime.launch_spec import LaunchSpec, PlanWarning, ProcessSpec
from llm_dyno.core.runtime.memory_report import MemoryEstimate

if TYPE_CHECKING:
    from llm_dyno.core.runtime.gpu_budget_report import GpuBudget


def plan_key(profile: Profile, secret_env: Mapping[str, str] | None = None) -> KeyReference | None:
    """The key clients must send to this profile's server, from the plan's one split of its secret
    flags (``secret_env``: what :func:`~llm_dyno.core.secrets.split_secret_flags` moved to the
    environment; None: split them here). None: the server wants no key."""
    return key_reference(api_key_reference(profile, secret_env))


def answer_failure(error: str) -> FailureReason:
    """Why a server that answers, but not as vLLM does, was stopped during its launch."""
    return FailureReason(
        FailureKind.MALFORMED_ANSWER,
        f"the server answers, but not as vLLM does: {error[:300]}; it was stopped",
        "is the profile's executable or image a vLLM server? its log shows what it is",
    )


class ServerState(StrEnum):
    """Where a server is in its life."""

    PULLING = "pulling"
    CREATING = "creating"
    STARTING = "starting"
    LOADING_WEIGHTS = "loading_weights"
    COMPILING = "compiling"
    CAPTURING_GRAPHS = "capturing_graphs"
    READY = "ready"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def is_live(self) -> bool:
        """The server process/container exists (or is being made)."""
        return self not in (ServerState.STOPPED, ServerState.FAILED)

    @property
    def is_loading(self) -> bool:
        """Between launch and ready."""
        return self in _LOADING


_LOADING = frozenset(
    {
        ServerState.PULLING,
        ServerState.CREATING,
        ServerState.STARTING,
        ServerState.LOADING_WEIGHTS,
        ServerState.COMPILING,
        ServerState.CAPTURING_GRAPHS,
    }
)


class FailureKind(StrEnum):
    """Classified reasons a launch fails or a server dies."""

    CUDA_OOM = "cuda_oom"
    KV_CACHE_TOO_SMALL = "kv_cache_too_small"
    MODEL_LEN_EXCEEDS_MODEL = "model_len_exceeds_model"  # --max-model-len beyond the model's positions
    NO_KV_MEMORY = "no_kv_memory"
    GPU_BUSY = "gpu_busy"
    UNRECOGNIZED_ARGUMENTS = "unrecognized_arguments"
    ENGINE_INIT_FAILED = "engine_init_failed"
    PORT_IN_USE = "port_in_use"
    IMAGE_NOT_FOUND = "image_not_found"
    NVIDIA_RUNTIME_MISSING = "nvidia_runtime_missing"
    DOCKER_UNREACHABLE = "docker_unreachable"
    DOCKER_PERMISSION = "docker_permission"
    CONTAINER_NAME_TAKEN = "container_name_taken"
    EXECUTABLE_NOT_FOUND = "executable_not_found"
    SECRET_MISSING = "secret_missing"  # noqa: S105 - a kind name: a keyring reference that cannot be read
    TIMEOUT = "timeout"
    NOT_RECORDED = "not_recorded"  # started, but its state file could not be written (full disk)
    EXITED = "exited"  # ended with no recognised cause
    MALFORMED_ANSWER = "malformed_answer"  # it answers, but not as vLLM does (or refuses the key): stopped
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FailureDetails:
    """What a failure's log lines gave, beyond the summary (what a fix needs): the flags vLLM refused,
    the port taken, GPU memory free / total / asked for (GiB) and the utilisation, the asked
    ``--max-model-len`` and the longest the KV cache can hold, and the root cause of an engine that
    failed to start."""

    arguments: tuple[str, ...] = ()
    port: int | None = None
    free_gib: float | None = None
    total_gib: float | None = None
    wanted_gib: float | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    estimated_max_model_len: int | None = None
    root_cause: str | None = None


@dataclass(frozen=True)
class FailureReason:
    """Why a server failed: a classification, a one-line summary, what to do, and the evidence."""

    kind: FailureKind
    summary: str
    hint: str = ""
    excerpt: tuple[str, ...] = ()  # the log lines that show the cause
    exit_code: int | None = None
    details: FailureDetails = field(default_factory=FailureDetails)


@dataclass(frozen=True)
class ServerStatus:
    """An immutable snapshot of a server's state."""

    state: ServerState
    since: float  # time.time() when this state began
    detail: str = ""  # e.g. "Loading safetensors checkpoint shards 2/3"
    progress: float | None = None  # 0..1 within the current phase when known
    failure: FailureReason | None = None


@dataclass(frozen=True)
class LaunchPlan:
    """What will run for a profile, built without side effects (a dry run shows it)."""

    profile: Profile
    runtime: str  # "docker" | "process"
    base_url: str  # e.g. http://127.0.0.1:8000
    host_port: int
    gpus: tuple[int, ...] | None  # None: all GPUs or none requested
    spec: LaunchSpec  # ProcessSpec, or ContainerSpec (docker-py's create arguments)
    warnings: tuple[PlanWarning, ...] = ()
    exposure: Exposure | None = None  # where it really listens (core/profiles/exposure.py)
    memory: MemoryEstimate | None = None  # will it fit? (core/runtime/memory.py; set by ServerManager.plan)
    key: KeyReference | None = None  # the key clients send, as a reference (set by the backend's plan)
    hold: GpuHold | None = None  # its share of each GPU (core/runtime/gpu_budget.py; set by the manager)
    budget: GpuBudget | None = None  # its GPUs beside the servers on them (ServerManager.with_budget)

    @property
    def engine(self) -> EngineConfig:
        """The profile's typed engine flags, read once when the profile was (:meth:`Profile.engine`)."""
        return self.profile.engine()

    @property
    def endpoint(self) -> Endpoint:
        """Where this plan's server answers and the key it wants: the one way to a server's endpoint."""
        docker = self.profile.docker
        return Endpoint(
            url=self.base_url,
            model=self.profile.served_model_name,
            key=self.key,
            docker_host=docker.host if self.runtime == "docker" and docker is not None else None,
            profile_name=self.profile.name,
        )

    def notes(self) -> list[str]:
        """Where it listens, then every warning: what plan and launch show before anything runs."""
        return ([self.exposure.describe()] if self.exposure else []) + [
            f"warning: {w}" for w in self.warnings
        ]

    def report(self) -> str:
        """The plan as a user reads it: profile, URL, :meth:`notes` as comments, then :meth:`describe`."""
        # port 0: Docker picks the host port at launch (core/runtime/picked_port.py)
        url = self.base_url if self.host_port else self.base_url.rsplit(":", 1)[0] + ":<chosen by Docker>"
        lines = [f"# profile {self.profile.name!r} ({self.runtime}) → {url}"]
        lines += [f"# {line}" for line in self.notes()]
        lines += [f"# {line}" for line in (self.memory.lines() if self.memory is not None else [])]
        lines += [f"# {line}" for line in (self.budget.lines() if self.budget is not None else [])]
        return "\n".join([*lines, self.describe()])

    def describe(self) -> str:
        """The command that would run, with its environment overrides (secrets stay references).
        Backends with another spec override it."""
        if isinstance(self.spec, ProcessSpec):
            return "\n".join(self.spec.lines())
        return "\n".join(f"{key}: {value}" for key, value in self.spec.create.items())


class LogBuffer:
    """A bounded, thread-safe buffer of log lines with subscribers: at most ``maxlen`` lines and,
    beyond the last 250 (always kept), at most ``max_chars`` characters."""

    MIN_LINES = 250

    def __init__(self, maxlen: int = 5000, max_chars: int = 16 << 20) -> None:
        self._lines: deque[tuple[float, str]] = deque(maxlen=max(maxlen, self.MIN_LINES))
        self._max_chars = max_chars
        self._chars = 0
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[float, str], None]] = []
        self.total = 0

    def append(self, line: str, ts: float | None = None) -> None:
        """Add a line and notify subscribers."""
        stamp = time.time() if ts is None else ts
        with self._lock:
            if len(self._lines) == self._lines.maxlen:
                self._chars -= len(self._lines[0][1])
            self._lines.append((stamp, line))
            self._chars += len(line)
            while self._chars > self._max_chars and len(self._lines) > self.MIN_LINES:
                self._chars -= len(self._lines.popleft()[1])
            self.total += 1
            subs = list(self._subscribers)
        for cb in subs:
            cb(stamp, line)

    def lines(self, last: int | None = None) -> list[str]:
        """The buffered lines (the last ``last`` of them)."""
        with self._lock:
            items = list(self._lines)
        if last is not None:
            items = items[-last:]
        return [line for _, line in items]

    def subscribe(self, callback: Callable[[float, str], None]) -> Callable[[], None]:
        """Call ``callback(ts, line)`` for every new line; returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe


class ServerHandle(ABC):
    """A launched (or adopted) server. Thread-safe; state changes are pushed to subscribers."""

    def __init__(self, plan: LaunchPlan) -> None:
        self.plan = plan
        self.logs = LogBuffer()
        self._status = ServerStatus(ServerState.CREATING, time.time())
        self._status_lock = threading.Lock()
        self._status_subs: list[Callable[[ServerStatus], None]] = []
        self._ready_event = threading.Event()
        self._done_event = threading.Event()

    @property
    def profile_name(self) -> str:
        """Name of the profile this server runs."""
        return self.plan.profile.name

    @property
    def status(self) -> ServerStatus:
        """The current status snapshot."""
        with self._status_lock:
            return self._status

    def subscribe(self, callback: Callable[[ServerStatus], None]) -> Callable[[], None]:
        """Call ``callback(status)`` on every state change; returns an unsubscribe function."""
        with self._status_lock:
            self._status_subs.append(callback)

        def unsubscribe() -> None:
            with self._status_lock:
                if callback in self._status_subs:
                    self._status_subs.remove(callback)

        return unsubscribe

    def _set_status(self, status: ServerStatus) -> None:
        with self._status_lock:
            if self._status.state in (ServerState.STOPPED, ServerState.FAILED) and status.state.is_live:
                return  # terminal states are final
            self._status = status
            subs = list(self._status_subs)
        if status.state is ServerState.READY:
            self._ready_event.set()
        if not status.state.is_live:
            self._ready_event.set()
            self._done_event.set()
        for cb in subs:
            cb(status)

    def wait_ready(self, timeout: float | None = None) -> ServerStatus:
        """Block until READY or a terminal state (or the timeout); returns the status then."""
        self._ready_event.wait(timeout)
        return self.status

    def wait_done(self, timeout: float | None = None) -> ServerStatus:
        """Block until STOPPED or FAILED (or the timeout)."""
        self._done_event.wait(timeout)
        return self.status

    @property
    def registry_key(self) -> str:
        """What identifies this server's record in the registry (a state file, a container id)."""
        return f"{self.plan.runtime}:{self.profile_name}"

    @abstractmethod
    def stop(self, timeout: float = 30.0) -> ServerStatus:
        """Stop gracefully (SIGTERM / docker stop), kill after ``timeout``, clean up; return the status."""

    @property
    @abstractmethod
    def exit_code(self) -> int | None:
        """The exit code once the server has ended."""


class Runtime(ABC):
    """A backend that runs profiles."""

    name: str

    @abstractmethod
    def plan(self, profile: Profile) -> LaunchPlan:
        """Validate and build what will run, without side effects. Raises a DynoError on bad input."""

    @abstractmethod
    def launch(self, plan: LaunchPlan) -> ServerHandle:
        """Start the plan; returns at once with a handle whose state follows the launch."""

    @abstractmethod
    def adopt(self, known: Collection[str] = ()) -> Iterable[ServerHandle]:
        """Find servers this app started earlier (e.g. before a restart, or from another llm-dyno
        process) that still run, leaving alone those whose :attr:`ServerHandle.registry_key` is in
        ``known``."""
