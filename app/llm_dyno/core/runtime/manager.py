"""The registry of running servers: the single truth the window, the CLI and ``status`` share.

It knows every server of every runtime, wherever it was launched: Docker containers found by their
labels on every engine the profiles name (each carrying the profile snapshot it was launched with), and
process servers recorded under keys that cannot collide (see
:mod:`~llm_dyno.core.runtime.registry_files`). :meth:`ServerManager.refresh` picks up servers launched
elsewhere; a stop from anywhere leaves a mark, so every follower shows it as stopped, not crashed. A
launch holds the profile's lock until its server exists, so a second launch of a running (or
launching) profile is refused.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import socket
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import LaunchPlan, Runtime, ServerHandle, ServerState
from llm_dyno.core.runtime.launch_spec import PlanWarning, ProcessSpec, WarningKind
from llm_dyno.core.runtime.process_backend import ProcessRuntime
from llm_dyno.core.runtime.registry_files import budget_lock, launch_lock, sweep_stop_marks

if TYPE_CHECKING:
    from llm_dyno.core.runtime.gpu_budget_report import GpuBudget

# The Docker backend needs the docker SDK and is written separately: load it only when asked for.
_LAZY_RUNTIMES: dict[str, tuple[str, str]] = {
    "docker": ("llm_dyno.core.runtime.docker_backend", "DockerRuntime"),
}


class LaunchBlocked(DynoError):
    """A launch was refused before anything started (port or GPU taken, already running)."""


def port_in_use(host: str, port: int) -> bool:
    """Whether something on this machine already listens on ``host:port`` (a bind test)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR: a socket lingering in TIME_WAIT does not stop vLLM (uvicorn sets it too).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


def _bind_host(plan: LaunchPlan) -> str:
    host = plan.spec.bind_host if isinstance(plan.spec, ProcessSpec) else None
    if host:
        return host
    return urlsplit(plan.base_url).hostname or "127.0.0.1"


def _stored_profiles() -> list[Profile]:
    from llm_dyno.core.profiles.store import ProfileStore

    try:
        return [sp.profile for sp in ProfileStore().load_all().profiles]
    except (DynoError, OSError):
        return []


def _stored_docker_hosts() -> list[str | None]:
    """The ``docker.host`` of every stored profile, read from its file's YAML: the profiles are not
    made again (a launch has read its own already, and a host is only connected to, never trusted)."""
    from llm_dyno.core import paths
    from llm_dyno.core.profiles.store import SUFFIX
    from llm_dyno.core.profiles.yamlio import load_with_lines

    hosts: list[str | None] = []
    folder = paths.profiles_dir()
    for path in sorted(folder.glob("*" + SUFFIX)) if folder.is_dir() else ():
        if path.name.startswith("."):
            continue
        try:
            data = load_with_lines(path.read_text(encoding="utf-8"), str(path))[0]
        except (DynoError, OSError, UnicodeDecodeError):
            continue
        docker = data.get("docker") if isinstance(data, dict) else None
        host = docker.get("host") if isinstance(docker, dict) else None
        hosts.append(host if isinstance(host, str) else None)
    return hosts


def known_docker_hosts(profiles: list[Profile] | None = None) -> tuple[str | None, ...]:
    """The engines to look for servers on: the default one and every ``docker.host`` the profiles
    (the stored ones when None) name."""
    named = (
        _stored_docker_hosts()
        if profiles is None
        else [p.docker.host if p.docker is not None else None for p in profiles]
    )
    hosts: list[str | None] = [None]
    for host in named:
        if host and host not in hosts:
            hosts.append(host)
    return tuple(hosts)


def _docker_runtime() -> Runtime:
    module_name, class_name = _LAZY_RUNTIMES["docker"]
    factory: Callable[..., Runtime] = getattr(importlib.import_module(module_name), class_name)

    def lookup(name: str) -> Profile | None:
        return next((p for p in _stored_profiles() if p.name == name), None)

    return factory(hosts=known_docker_hosts(), profile_lookup=lookup)


# How long a launch holds the profile's lock waiting for its server to exist (a pull can be long).
EXIST_TIMEOUT_S = 1800.0


class ServerManager:
    """The registry: maps a profile's runtime to its backend, launches profiles and tracks every server.

    Thread-safe. Handles of servers that end stay listed (with their final status) until
    :meth:`forget` or a newer launch of the same profile replaces them.
    """

    def __init__(self, runtimes: dict[str, Runtime] | None = None) -> None:
        self._runtimes: dict[str, Runtime] = dict(runtimes or {})
        self._runtimes.setdefault("process", ProcessRuntime())
        self._handles: dict[str, ServerHandle] = {}
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self.warnings: list[str] = []  # e.g. "docker: engine not reachable" during adopt_all
        # told of every server launched here or found running (a window follows each), from the
        # thread that launched or found it
        self.on_new: Callable[[ServerHandle], None] | None = None

    # ---- backends ------------------------------------------------------------------------------
    def runtime(self, name: str) -> Runtime:
        """The backend for a runtime name ("process", "docker"); raises DynoError when unavailable."""
        with self._lock:
            found = self._runtimes.get(name)
        if found is not None:
            return found
        if name not in _LAZY_RUNTIMES:
            raise DynoError(f"unknown runtime {name!r}", hint="use 'docker' or 'process'")
        try:
            backend = _docker_runtime()
        except (ImportError, AttributeError) as exc:
            raise DynoError(
                f"the {name} runtime is not available: {exc}", hint="install the missing package"
            ) from exc
        with self._lock:
            return self._runtimes.setdefault(name, backend)

    def runtime_for(self, profile: Profile) -> Runtime:
        """The backend that runs this profile."""
        return self.runtime(profile.runtime.value)

    def plan(self, profile: Profile, *, gpu_name: str | None = None) -> LaunchPlan:
        """What would run for the profile (no side effects), with its memory estimate (``gpu_name``:
        plan for that card from the datasheet table instead of this machine's GPU)."""
        from llm_dyno.core.runtime.gpu_budget import hold_of
        from llm_dyno.core.runtime.memory import estimate_memory, with_memory

        plan = self.runtime_for(profile).plan(profile)
        plan = with_memory(plan, estimate_memory(profile, gpu_name=gpu_name))
        return replace(plan, hold=hold_of(plan))

    def budget(self, plan: LaunchPlan) -> GpuBudget | None:
        """The GPU memory budget of the plan beside the servers live on the same machine (adopt them
        first); None when the plan uses no GPU. Live memory is read through NVML for this machine."""
        from llm_dyno.core.runtime.gpu_budget import budget_for, nvml_live

        running = [
            (h.profile_name, h.status.state.value, h.plan)
            for h in self.live()
            if h.profile_name != plan.profile.name and _same_machine(h.plan, plan)
        ]
        if _is_local(plan):
            return budget_for(plan, running, nvml_live)
        return budget_for(plan, running, None, f"the GPUs are on the Docker host {_docker_host(plan)}")

    def with_budget(self, plan: LaunchPlan) -> LaunchPlan:
        """The plan carrying its GPU budget beside the servers followed now (:meth:`budget`); one that
        does not fit adds the refusal a launch would give to its warnings."""
        budget = self.budget(plan)
        if budget is None:
            return plan
        if budget.fits:
            return replace(plan, budget=budget)
        message, hint = budget.refusal()
        refused = PlanWarning(WarningKind.MEMORY, f"{message}; {hint}")
        return replace(plan, budget=budget, warnings=(*plan.warnings, refused))

    # ---- handles -------------------------------------------------------------------------------
    def handles(self) -> list[ServerHandle]:
        """Every tracked handle, in launch order."""
        with self._lock:
            return list(self._handles.values())

    def get(self, profile_name: str) -> ServerHandle | None:
        """The handle of a profile, if tracked."""
        with self._lock:
            return self._handles.get(profile_name)

    def live(self) -> list[ServerHandle]:
        """Handles whose server exists (loading, ready or stopping)."""
        return [h for h in self.handles() if h.status.state.is_live]

    def forget(self, profile_name: str) -> None:
        """Stop tracking a profile's handle (it must have ended)."""
        with self._lock:
            handle = self._handles.get(profile_name)
            if handle is not None and not handle.status.state.is_live:
                del self._handles[profile_name]

    def adopt_all(self) -> list[ServerHandle]:
        """Find servers that run but are not followed yet, in every available backend (launched before a
        restart, or by another llm-dyno process); returns the new ones. Warnings name what could not be
        read (an engine that does not answer, a container that cannot be followed)."""
        found: list[ServerHandle] = []
        names = ["process", *(n for n in _LAZY_RUNTIMES if n != "process")]
        with self._refresh_lock:
            warnings: list[str] = []
            for name in names:
                with self._lock:
                    known = {h.registry_key for h in self._handles.values() if h.status.state.is_live}
                try:
                    backend = self.runtime(name)
                    adopted = list(backend.adopt(known))
                except DynoError as exc:
                    warnings.append(f"{name}: {exc.message}")
                    continue
                except Exception as exc:
                    warnings.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                warnings += [f"{name}: {w}" for w in getattr(backend, "warnings", ())]
                found += self._track(adopted)
            self.warnings = warnings
        return found

    def _track(self, adopted: list[ServerHandle]) -> list[ServerHandle]:
        """Keep the adopted handles of profiles not followed yet; tell :attr:`on_new` of each."""
        kept: list[ServerHandle] = []
        with self._lock:
            for handle in adopted:
                current = self._handles.get(handle.profile_name)
                if current is not None and current.status.state.is_live:
                    continue  # the same profile is followed under another key: keep ours
                self._handles[handle.profile_name] = handle
                kept.append(handle)
        for handle in kept:
            if handle.plan.memory is None:  # a backend's own plan: add what a launch from here shows
                from llm_dyno.core.runtime.memory import estimate_memory, with_memory

                handle.plan = with_memory(handle.plan, estimate_memory(handle.plan.profile))
            if self.on_new is not None:
                self.on_new(handle)
        return kept

    def _adopt_for(self, profile: Profile) -> None:
        """Follow the servers of the profile's own backend (and Docker engine) before launching it."""
        backend = self.runtime_for(profile)
        with self._lock:
            known = {h.registry_key for h in self._handles.values() if h.status.state.is_live}
        try:
            if profile.runtime.value == "docker":
                host = profile.docker.host if profile.docker is not None else None
                adopted = list(backend.adopt(known, hosts=(host,)))  # type: ignore[call-arg]
            else:
                adopted = list(backend.adopt(known))
        except DynoError:
            return  # the launch reports an engine that does not answer
        self._track(adopted)

    def refresh(self) -> list[ServerHandle]:
        """Follow servers launched or found since the last look (what a window polls); the new ones."""
        sweep_stop_marks()
        return self.adopt_all()

    # ---- launching -----------------------------------------------------------------------------
    def collisions(self, plan: LaunchPlan) -> list[str]:
        """Why this plan clashes with a live server: the same profile, or the same host port."""
        problems: list[str] = []
        for other in self.live():
            if other.profile_name == plan.profile.name:
                problems.append(f"profile '{other.profile_name}' is already running ({other.plan.base_url})")
                continue
            # (port 0: Docker picks a free one at launch, which cannot clash)
            if plan.host_port and other.plan.host_port == plan.host_port and _same_machine(other.plan, plan):
                problems.append(
                    f"port {plan.host_port} is already used by profile '{other.profile_name}' "
                    f"({other.plan.base_url}); change --port in one of them"
                )
        return problems  # a GPU in common is for the budget to judge (see budget)

    def launch(
        self,
        profile: Profile,
        *,
        check: bool = True,
        on_handle: Callable[[ServerHandle], None] | None = None,
    ) -> ServerHandle:
        """Plan and launch a profile; returns once its server exists (process spawned, container created)
        or has failed. With ``check``, refuse (LaunchBlocked) when the profile already runs anywhere,
        another launch of it is under way, its port is taken, or it does not fit in the GPU memory
        budget beside the servers running on its GPUs (:meth:`budget`). ``on_handle`` sees the handle
        as soon as it exists (to follow a pull or a container being created)."""
        plan = self.plan(profile)
        on_gpus = budget_lock() if check and plan.hold is not None else contextlib.nullcontext()
        with launch_lock(profile.name), on_gpus:
            if check:
                # a server launched from another llm-dyno counts too; on a GPU, those of every runtime
                if plan.hold is not None:
                    self.adopt_all()
                else:
                    self._adopt_for(profile)
                problems = self.collisions(plan)
                if (
                    not problems
                    and _is_local(plan)
                    and plan.host_port
                    and port_in_use(_bind_host(plan), plan.host_port)
                ):
                    problems.append(
                        f"port {plan.host_port} on {_bind_host(plan)} is already taken by another program"
                    )
                if problems:
                    raise LaunchBlocked(
                        f"cannot launch '{profile.name}': " + "; ".join(problems),
                        hint="stop the other server or change the port / GPUs in the profile",
                    )
                budget = self.budget(plan)
                if budget is not None and not budget.fits:
                    message, hint = budget.refusal()
                    raise LaunchBlocked(message, hint=hint)
                plan = replace(plan, budget=budget)  # what the window's launch panel shows
            handle = self.runtime_for(profile).launch(plan)
            with self._lock:
                self._handles[profile.name] = handle
            for callback in (self.on_new, on_handle):
                if callback is not None:
                    callback(handle)
            _wait_exists(handle, EXIST_TIMEOUT_S)
        return handle

    def stop(self, profile_name: str, timeout: float = 30.0) -> ServerHandle:
        """Stop a tracked server; raises DynoError when the profile is not running."""
        handle = self.get(profile_name)
        if handle is None or not handle.status.state.is_live:
            raise DynoError(f"'{profile_name}' is not running", hint="see `llm-dyno status`")
        handle.stop(timeout)
        return handle

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every live server (e.g. when the app quits and the user asked for it)."""
        for handle in self.live():
            with contextlib.suppress(DynoError):
                handle.stop(timeout)


def _docker_host(plan: LaunchPlan) -> str | None:
    docker = plan.profile.docker
    return docker.host if docker is not None and plan.runtime == "docker" else None


def _is_local(plan: LaunchPlan) -> bool:
    return _docker_host(plan) in (None, "", "unix:///var/run/docker.sock")


def _same_machine(a: LaunchPlan, b: LaunchPlan) -> bool:
    if _is_local(a) and _is_local(b):
        return True
    return _docker_host(a) == _docker_host(b)


def _wait_exists(handle: ServerHandle, timeout_s: float) -> None:
    """Block until the server exists or has ended (what a second launcher's adoption would then see)."""
    done = threading.Event()

    def check(status: object = None) -> None:
        state = handle.status.state
        if state not in (ServerState.PULLING, ServerState.CREATING) or not state.is_live:
            done.set()

    unsubscribe = handle.subscribe(check)
    try:
        check()
        done.wait(timeout_s)
    finally:
        unsubscribe()
