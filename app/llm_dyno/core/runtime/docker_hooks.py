"""Compose lifecycle hooks at launch and stop, as Compose runs them, with a deadline and their output
handed line by line to the launch log:

- ``pre_start`` (Compose 2.40+, docker/compose pkg/compose/pre_start.go): each a one-off container of
  its own, in order, before the server's container starts: the hook's image (or the server's), its
  command, user and working folder, the server's environment plus its own, the server's volumes
  (``volumes_from`` the created, not yet started container) and its network. A status other than 0
  stops the launch ("pre_start[1] exited with status 17", as Compose names the hook); the hook
  container is removed either way (its output is in the launch log), and so is one a killed launch
  left behind, before the hooks run again.
- ``post_start`` / ``pre_stop`` (Compose 2.30+): each a ``docker exec`` in the container once it
  started / before it is stopped.

A hook that fails or does not finish within the deadline raises :class:`HookFailed` ("post_start hook
exited with status 127", as Compose says it). Secret references in a hook's environment are filled in
from the launching environment, like the container's own.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import docker.errors
import requests

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import ExecHook, InitHook
from llm_dyno.core.runtime.stream_bounds import HOOK_OUTPUT_LIMIT, StreamBounds, exec_lines, log_lines
from llm_dyno.core.secrets import redact_secrets, resolve_env

HOOK_DEADLINE_S = 120.0
INIT_DEADLINE_S = 1800.0  # an init container may fetch weights: long, but never without an end
PRE_START_LABEL = "llm-dyno.pre-start-of"  # on every init container: the server container's name


class HookFailed(DynoError):
    """A lifecycle hook failed or ran past its deadline."""


def _shown(hook: ExecHook) -> str:
    return redact_secrets(" ".join(hook.command))[:200]


def run_hooks(
    api: Any,
    container_id: str,
    hooks: Sequence[ExecHook],
    when: str,
    emit: Callable[[str], None],
    deadline_s: float = HOOK_DEADLINE_S,
) -> None:
    """Run ``hooks`` in order with docker-py's low-level ``api``; every output line goes to ``emit``
    (prefixed ``[post_start]``), and so does the outcome of each."""
    for hook in hooks:
        emit(f"[{when}] running: {_shown(hook)}")
        exec_id = api.exec_create(
            container_id,
            list(hook.command),
            user=hook.user or "",
            workdir=hook.working_dir,
            environment=resolve_env(hook.environment) or None,
        )["Id"]
        failed: list[BaseException] = []
        # the output bounded in size and time: the stream is shut at the deadline, so neither an
        # endless line nor a drip outlives the hook (docker_hooks' deadline is the stream's)
        bounds = StreamBounds(f"{when} hook output", max_bytes=HOOK_OUTPUT_LIMIT, deadline_s=deadline_s)
        thread = threading.Thread(
            target=_pump,
            args=(functools.partial(exec_lines, api, exec_id, bounds), emit, when, failed),
            name=f"docker-hook-{when}",
            daemon=True,
        )
        thread.start()
        thread.join(deadline_s + 2.0)
        timed_out = any(getattr(f, "kind", "") == "deadline" for f in failed)
        if thread.is_alive() or timed_out:
            raise HookFailed(
                f"{when} hook ({_shown(hook)}) did not finish within {deadline_s:.0f} s",
                hint=f"make the hook finish sooner, or remove it from docker.{when}",
            )
        if failed:
            raise HookFailed(f"{when} hook ({_shown(hook)}) could not run: {failed[0]}")
        code = api.exec_inspect(exec_id).get("ExitCode")
        emit(f"[{when}] exited with status {code}")
        if code != 0:
            raise HookFailed(
                f"{when} hook exited with status {code} ({_shown(hook)})",
                hint=f"its output is in the log, lines starting [{when}]",
            )


def _pump(
    open_lines: Callable[[], Iterable[str]],
    emit: Callable[[str], None],
    when: str,
    failed: list[BaseException],
) -> None:
    """Hand every line of the output ``open_lines`` opens (bounded: stream_bounds) to ``emit``,
    prefixed ``[when]``."""
    try:
        for line in open_lines():
            emit(f"[{when}] {line}")
    except Exception as exc:  # the engine went away mid-stream, or a bound broke: said by the caller
        failed.append(exc)


def _remove_init_containers(client: Any, server_name: str) -> None:
    """Remove the init containers of ``server_name`` a killed launch left behind (Compose does the
    same before it runs the hooks again)."""
    for left in client.containers.list(all=True, filters={"label": f"{PRE_START_LABEL}={server_name}"}):
        with contextlib.suppress(docker.errors.NotFound):
            left.remove(force=True, v=True)


def run_init_containers(
    client: Any,
    server: Any,
    create: Mapping[str, Any],
    hooks: Sequence[InitHook],
    emit: Callable[[str], None],
    stopping: threading.Event,
    deadline_s: float = INIT_DEADLINE_S,
) -> bool:
    """Run the ``pre_start`` ``hooks`` in order for ``server`` (created, not started; ``create``: the
    arguments it was created with, secrets filled in). False when ``stopping`` was set meanwhile (the
    running hook's container removed); :class:`HookFailed` when one fails."""
    _remove_init_containers(client, str(create["name"]))
    network = {
        key: create[key] for key in ("network_mode", "network") if create.get(key)
    }  # the server's own: a name it joins, or host / none / container:…
    for index, hook in enumerate(hooks):
        tag = f"pre_start[{index}]"
        emit(f"[pre_start] running {tag}: {_shown(hook)}")
        container = client.containers.create(
            image=hook.image or str(create["image"]),
            command=list(hook.command),
            user=hook.user or "",
            working_dir=hook.working_dir,
            environment={**dict(create.get("environment") or {}), **resolve_env(hook.environment)},
            volumes_from=[str(server.id)],
            labels={PRE_START_LABEL: str(create["name"])},
            **network,
        )
        try:
            failed: list[BaseException] = []
            container.start()
            bounds = StreamBounds(f"{tag} output", max_bytes=HOOK_OUTPUT_LIMIT, deadline_s=deadline_s)
            pump = threading.Thread(
                target=_pump,
                args=(
                    functools.partial(
                        log_lines, client.api, str(container.id), follow=True, bounds=bounds, cancel=stopping
                    ),
                    emit,
                    "pre_start",
                    failed,
                ),
                name="docker-pre-start",
                daemon=True,
            )
            pump.start()
            code = _wait(container, stopping, time.monotonic() + deadline_s)
            pump.join(5)
            if code is not None and any(getattr(f, "kind", "") == "size" for f in failed):
                raise HookFailed(f"{tag} ({_shown(hook)}): {failed[0]}", hint="make the hook write less")
        finally:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True, v=True)
        if code is None:
            if stopping.is_set():
                return False
            raise HookFailed(
                f"{tag} ({_shown(hook)}) did not finish within {deadline_s:.0f} s",
                hint="make the hook finish sooner, or remove it from docker.pre_start",
            )
        emit(f"[pre_start] {tag} exited with status {code}")
        if code != 0:
            raise HookFailed(
                f"{tag} exited with status {code} ({_shown(hook)})",
                hint="its output is in the log, lines starting [pre_start]",
            )
    return True


def _wait(container: Any, stopping: threading.Event, deadline: float) -> int | None:
    """The container's exit status; None when ``stopping`` was set or the deadline passed."""
    while not stopping.is_set() and time.monotonic() < deadline:
        try:
            return int(container.wait(timeout=1)["StatusCode"])
        except (requests.exceptions.ConnectionError, requests.exceptions.ReadTimeout):
            continue  # still running: docker-py's wait timed out
    return None
