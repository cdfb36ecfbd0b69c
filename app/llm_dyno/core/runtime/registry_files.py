"""The files behind the registry of running servers: keys that cannot collide, launch locks, stop marks.

Several processes share one registry (the window, ``llm-dyno launch`` in a terminal, ``llm-dyno stop``
from a script), so its state lives in files under ``data_dir()/servers``:

- ``<stem>-<hash>.json``: a process server's record (pid, process group, start time, profile snapshot,
  its share of each GPU).
  The hash of the exact profile name keeps ``A`` and ``a`` (or ``a b`` and ``a-b``) apart on every
  file system.
- ``<stem>-<hash>.lock``: held (``flock``) while a launch of that profile is under way, so two launches
  at once cannot both start a server.
- ``stopped/<instance>``: written by whoever stops a server before it signals it, so every other
  process following the same server reports "stopped" rather than "crashed". Old marks are swept.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llm_dyno.core.atomic import open_no_follow
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.paths import data_dir
from llm_dyno.core.profiles.store import file_stem
from llm_dyno.core.runtime.process_groups import carries_marker, cmdline, proc_start_ticks

STOP_MARK_MAX_AGE_S = 24 * 3600


@dataclass(frozen=True)
class ProcessRecord:
    """A process server's record in the registry: enough to find it again, tell it from a process
    that reused its pid, and end its whole process group."""

    pid: int
    pgid: int  # the server leads its own group (start_new_session): its engine processes are in it
    start_ticks: int | None  # /proc start time of the pid: another program reusing it differs
    started_at: float
    argv: tuple[str, ...]
    url: str
    host_port: int
    log_path: str
    profile_name: str
    profile_hash: str
    profile: dict[str, Any] = field(default_factory=dict)  # the snapshot launched (Profile.to_dict)
    runtime: str = "process"
    marker: str = ""  # LLM_DYNO_SERVER_ID in the server's environment: proves a process is this server's
    gpu_hold: dict[str, Any] | None = None  # its share of each GPU at launch (GpuHold.to_dict; gpu_budget.py)

    def to_json(self) -> str:
        """The file's text."""
        data = asdict(self)
        data["argv"] = list(self.argv)
        return json.dumps(data, indent=2)

    @staticmethod
    def from_json(text: str) -> ProcessRecord:
        """Read a record; ValueError when it is not one (malformed, another runtime's, wrong types)."""
        data = loads_outside(text, "the server record")
        if not isinstance(data, dict) or data.get("runtime", "process") != "process":
            raise ValueError("not a process server's record")
        try:
            pid = int(data["pid"])
            ticks = data.get("start_ticks")
            profile = data.get("profile")
            return ProcessRecord(
                pid=pid,
                pgid=int(data.get("pgid") or pid),
                start_ticks=ticks if isinstance(ticks, int) and not isinstance(ticks, bool) else None,
                started_at=float(data.get("started_at") or time.time()),
                argv=tuple(str(a) for a in data["argv"]),
                url=str(data["url"]),
                host_port=int(data["host_port"]),
                log_path=str(data["log_path"]),
                profile_name=str(data.get("profile_name") or ""),
                profile_hash=str(data.get("profile_hash") or ""),
                profile=dict(profile) if isinstance(profile, dict) else {},
                marker=str(data.get("marker") or ""),
                gpu_hold=data["gpu_hold"] if isinstance(data.get("gpu_hold"), dict) else None,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a process record without a valid {exc}") from exc

    @staticmethod
    def read(path: Path) -> ProcessRecord | None:
        """The record in ``path``, or None when it cannot be read or is not one."""
        try:
            return ProcessRecord.from_json(path.read_text())
        except (OSError, ValueError):
            return None


class LaunchInProgress(DynoError):
    """Another process is launching the same profile right now (or holds the GPU budget too long)."""


def servers_dir() -> Path:
    """Folder of the registry's files."""
    return data_dir() / "servers"


def server_key(profile_name: str) -> str:
    """A file-name-safe key for a profile that no other profile name shares (case and punctuation kept)."""
    digest = hashlib.sha256(profile_name.encode("utf-8")).hexdigest()[:10]
    return f"{file_stem(profile_name)}-{digest}"


def state_path(profile_name: str) -> Path:
    """Where a process server's record is kept."""
    return servers_dir() / f"{server_key(profile_name)}.json"


@contextlib.contextmanager
def launch_lock(profile_name: str) -> Iterator[None]:
    """Hold the profile's launch lock; :class:`LaunchInProgress` when another process holds it."""
    folder = servers_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{server_key(profile_name)}.lock"
    try:
        fd = open_no_follow(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise DynoError(f"cannot take the launch lock: {exc.strerror or exc}", hint=f"see {path}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LaunchInProgress(
                f"'{profile_name}' is being launched by another llm-dyno right now",
                hint="wait for that launch; `llm-dyno status` shows it once it runs",
            ) from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


# How long a launch onto GPUs waits for another one to pass the GPU budget and start its server.
BUDGET_WAIT_S = 120.0


@contextlib.contextmanager
def budget_lock(wait_s: float = BUDGET_WAIT_S) -> Iterator[None]:
    """Hold this machine's GPU budget lock: one launch onto GPUs at a time checks the budget and starts
    its server, so two launches at once cannot both count the same free memory. Waits up to ``wait_s``
    for another launch; then :class:`LaunchInProgress`."""
    folder = servers_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpu-budget.lock"
    try:
        fd = open_no_follow(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise DynoError(
            f"cannot take the GPU budget lock: {exc.strerror or exc}", hint=f"see {path}"
        ) from None
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LaunchInProgress(
                        f"another launch onto GPUs has held the GPU budget for over {wait_s:g} s "
                        "(a container image being pulled?)",
                        hint="wait for that launch to start its server, then launch again",
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _marks() -> Path:
    return servers_dir() / "stopped"


def mark_stopped(instance: str) -> None:
    """Record that the server ``instance`` is being stopped on purpose (before it is signalled). A mark
    that cannot be written (a full disk) never stops the stop: other followers then call it an exit."""
    folder = _marks()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd = open_no_follow(folder / instance, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as mark:
            mark.write(f"{os.getpid()} {time.time():.0f}\n")


def was_stopped(instance: str) -> bool:
    """Whether somebody stopped ``instance`` on purpose (so its end is no crash)."""
    return (_marks() / instance).exists()


def sweep_stop_marks(max_age_s: float = STOP_MARK_MAX_AGE_S) -> None:
    """Remove stop marks older than ``max_age_s`` (their servers ended long ago)."""
    folder = _marks()
    if not folder.is_dir():
        return
    cutoff = time.time() - max_age_s
    for mark in folder.iterdir():
        with contextlib.suppress(OSError):
            if mark.stat().st_mtime < cutoff:
                mark.unlink()


def is_recorded_server(record: ProcessRecord) -> bool:
    """Whether the record's pid is still the server it names: the same start time (which must have
    been recorded), the same command line (a script's starts with its interpreter: the tail is
    compared) and, for records that have one, the marker in its environment."""
    ticks = proc_start_ticks(record.pid)
    if ticks is None or record.start_ticks is None or ticks != record.start_ticks:
        return False
    if len(record.argv) < 2 or cmdline(record.pid)[-(len(record.argv) - 1) :] != list(record.argv[1:]):
        return False
    return not record.marker or carries_marker(record.pid, record.marker)
