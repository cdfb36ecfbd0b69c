"""A local vLLM server's handle: its log file tailed, readiness, exit and stop of its process group.

Split from :mod:`~llm_dyno.core.runtime.process_backend`, which holds the runtime (plan, launch,
adopt) and still exports :class:`ProcessHandle`.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from llm_dyno.core.runtime.base import (
    FailureReason,
    LaunchPlan,
    ServerHandle,
    ServerState,
    ServerStatus,
    answer_failure,
)
from llm_dyno.core.runtime.lines import LineSplitter
from llm_dyno.core.runtime.logformats import PhaseTracker, classify_failure
from llm_dyno.core.runtime.process_groups import (
    proc_start_ticks,
    signal_group,
    wait_group_gone,
)
from llm_dyno.core.runtime.readiness import ReadinessProbe
from llm_dyno.core.runtime.registry_files import (
    ProcessRecord,
    mark_stopped,
    was_stopped,
)

__all__ = ["ProcessHandle"]

TAIL_LINES = 400  # lines classified after an exit; the cause is often 40+ lines above the last one


class ProcessHandle(ServerHandle):
    """A ``vllm serve`` process (launched here, or adopted from its state file)."""

    def __init__(
        self,
        plan: LaunchPlan,
        *,
        pid: int,
        log_path: Path,
        state_path: Path,
        started_at: float,
        popen: subprocess.Popen[bytes] | None = None,
        start_ticks: int | None = None,
    ) -> None:
        super().__init__(plan)
        self.pid = pid
        self.pgid = pid  # start_new_session=True: the server leads its own group
        self.log_path = log_path
        self.state_path = state_path
        self.started_at = started_at
        self.adopted = popen is None
        self._popen = popen
        self._start_ticks = start_ticks
        self._exit_code: int | None = None
        self._exited = threading.Event()
        self._stopping = threading.Event()
        self._tracker = PhaseTracker()
        self._probe = ReadinessProbe(plan.base_url, key=plan.key)
        self._threads: list[threading.Thread] = []
        self._set_status(ServerStatus(ServerState.STARTING, started_at, "process started"))

    @property
    def exit_code(self) -> int | None:
        """The exit code (negative: killed by that signal); None while running or when adopted."""
        return self._exit_code

    @property
    def registry_key(self) -> str:
        """This server's record: its state file."""
        return str(self.state_path)

    @property
    def instance_id(self) -> str:
        """This run of the server (pid and start time): what a stop mark names."""
        return f"process-{self.pid}-{self._start_ticks}"

    def _start_threads(self, read_from: int = 0) -> None:
        for name, target in (("reader", lambda: self._read(read_from)), ("ready", self._wait_ready)):
            self._spawn(name, target)
        self._spawn("watch", self._watch)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"llm-dyno-{name}:{self.profile_name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    # ---- threads -------------------------------------------------------------------------------
    def _read(self, offset: int) -> None:
        splitter = LineSplitter()
        with open(self.log_path, "rb") as fh:
            fh.seek(offset)
            if offset:
                fh.readline()  # we landed mid-line: skip to the next whole one
            drained = False
            while True:
                chunk = fh.read(65536)
                if chunk:
                    for line in splitter.feed(chunk):
                        self._on_line(line)
                    continue
                if drained:
                    break
                # Once the writer is gone, one more pass reads what it wrote just before exiting.
                drained = self._exited.is_set()
                if not drained:
                    time.sleep(0.05)
        for line in splitter.flush():
            self._on_line(line)

    def _on_line(self, line: str) -> None:
        self.logs.append(line)
        update = self._tracker.feed(line)
        if update is not None and self.status.state.is_loading and not self._stopping.is_set():
            self._set_status(ServerStatus(update.state, time.time(), update.detail, update.progress))

    def _wait_ready(self) -> None:
        result = self._probe.wait()
        if self._stopping.is_set() or self._exited.is_set():
            return
        if result.ready:
            models = ", ".join(result.models)
            self._set_status(ServerStatus(ServerState.READY, time.time(), f"serving {models}".strip()))
        elif result.error != "cancelled" and not self.adopted:  # it answers, but not as vLLM does
            self.stop(10, failure=answer_failure(result.error))

    def _alive(self) -> bool:
        ticks = proc_start_ticks(self.pid)
        return ticks is not None and (self._start_ticks is None or ticks == self._start_ticks)

    def _watch(self) -> None:
        if self._popen is not None:
            self._exit_code = self._popen.wait()
        else:
            while self._alive():
                time.sleep(0.2)
        self._exited.set()
        self._probe.cancel()
        if self._stopping.is_set():
            return  # stop() reports the end
        if was_stopped(self.instance_id):  # `llm-dyno stop` (or another window) stopped it on purpose
            wait_group_gone(self.pgid, 15.0)
            self._join()
            self._set_status(ServerStatus(ServerState.STOPPED, time.time(), "stopped by another llm-dyno"))
            return
        # Children (EngineCore, workers) may outlive the main process: end the whole group.
        signal_group(self.pgid, signal.SIGKILL)
        wait_group_gone(self.pgid, 5.0)
        self._join(timeout=10)
        self._remove_state_file()
        reason = classify_failure(self.logs.lines(last=TAIL_LINES), self._exit_code)
        self._set_status(ServerStatus(ServerState.FAILED, time.time(), reason.summary, failure=reason))

    # ---- stop ----------------------------------------------------------------------------------
    def stop(self, timeout: float = 30.0, *, failure: FailureReason | None = None) -> ServerStatus:
        """SIGTERM to the process group, SIGKILL after ``timeout``; joins every thread of this handle.
        With ``failure`` it ends FAILED for that reason (a server stopped for answering wrongly)."""
        if not self.status.state.is_live:
            self._join()
            return self.status
        self._stopping.set()
        self._probe.cancel()
        mark_stopped(self.instance_id)
        self._set_status(ServerStatus(ServerState.STOPPING, time.time(), "stopping"))
        if not self._exited.is_set():
            signal_group(self.pgid, signal.SIGTERM)
        if not self._exited.wait(timeout):
            signal_group(self.pgid, signal.SIGKILL)
            self._exited.wait(10)
        # The main process is gone; give the rest of its group a moment, then make sure.
        if not wait_group_gone(self.pgid, 5.0):
            signal_group(self.pgid, signal.SIGKILL)
            wait_group_gone(self.pgid, 5.0)
        self._join()
        self._remove_state_file()
        detail = "stopped" if self._exit_code is None else f"stopped (exit code {self._exit_code})"
        state = ServerState.STOPPED if failure is None else ServerState.FAILED
        detail = detail if failure is None else failure.summary
        self._set_status(ServerStatus(state, time.time(), detail, failure=failure))
        return self.status

    def _join(self, timeout: float = 15.0) -> None:
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=timeout)

    def _remove_state_file(self) -> None:
        # Only our own: a newer launch of the same profile may have replaced it.
        record = ProcessRecord.read(self.state_path)
        if record is not None and record.pid == self.pid:
            with contextlib.suppress(OSError):
                self.state_path.unlink()


class _FailedHandle(ServerHandle):
    """A launch that failed before any process ran (e.g. the executable is missing)."""

    def __init__(self, plan: LaunchPlan, reason: FailureReason) -> None:
        super().__init__(plan)
        self._set_status(ServerStatus(ServerState.FAILED, time.time(), reason.summary, failure=reason))

    @property
    def exit_code(self) -> int | None:
        return None

    def stop(self, timeout: float = 30.0) -> ServerStatus:
        return self.status
