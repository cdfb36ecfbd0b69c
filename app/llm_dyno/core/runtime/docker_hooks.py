"""Compose lifecycle hooks at launch and stop: each hook a ``docker exec`` in the container, as Compose
2.30+ runs them (``post_start`` once the container started, ``pre_stop`` before it is stopped), with a
deadline, its output handed line by line to the launch log.

A hook that exits with a status other than 0, or does not finish within the deadline, raises
:class:`HookFailed` ("post_start hook exited with status 127", as Compose says it). Secret references
in a hook's environment are filled in from the launching environment, like the container's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import ExecHook
from llm_dyno.core.runtime.lines import LineSplitter
from llm_dyno.core.secrets import redact_secrets, resolve_env

HOOK_DEADLINE_S = 120.0


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

        def pump(exec_id: str = exec_id, failed: list[BaseException] = failed) -> None:
            splitter = LineSplitter()
            try:
                for chunk in api.exec_start(exec_id, stream=True):
                    for line in splitter.feed(chunk):
                        emit(f"[{when}] {line}")
                for line in splitter.flush():
                    emit(f"[{when}] {line}")
            except Exception as exc:  # the engine went away mid-stream: said by the caller below
                failed.append(exc)

        thread = threading.Thread(target=pump, name=f"docker-hook-{when}", daemon=True)
        thread.start()
        thread.join(deadline_s)
        if thread.is_alive():
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
