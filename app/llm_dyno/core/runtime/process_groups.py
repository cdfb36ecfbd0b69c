"""The process groups of local servers, read from /proc: is a server (and what it started) alive, and
ending all of it. vLLM runs its engine in processes of its own, in the server's process group, so a
server is gone only when its whole group is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def proc_start_ticks(pid: int) -> int | None:
    """The process start time in clock ticks since boot (field 22 of /proc/PID/stat): a pid-reuse guard."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19]) if fields[0] != "Z" else None  # a zombie has ended


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Wait until no process of the group is left (killed children linger until reaped)."""
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_members(pgid: int) -> list[int]:
    """Pids of the processes in group ``pgid`` (from /proc)."""
    members: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


MARKER_ENV = "LLM_DYNO_SERVER_ID"  # in every server's environment, inherited by its engine processes
_ENVIRON_READ_BYTES = 4 << 20


def carries_marker(pid: int, marker: str) -> bool:
    """Whether process ``pid``'s environment holds ``LLM_DYNO_SERVER_ID=marker``: what this app put
    in the environment of the server it launched (its engine processes inherit it). False when it
    cannot be read."""
    if not marker:
        return False
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read(_ENVIRON_READ_BYTES)
    except OSError:
        return False
    return f"{MARKER_ENV}={marker}".encode() in raw.split(b"\0")


def writes_to(pid: int, path: Path) -> bool:
    """Whether process ``pid``'s standard output or error is the file ``path`` (what a server launched by
    this app and the engine processes it started inherit: its log file)."""
    for fd in (1, 2):
        try:
            if Path(os.readlink(f"/proc/{pid}/fd/{fd}")) == path:
                return True
        except OSError:
            continue
    return False


def end_orphaned_group(
    pid: int, pgid: int, start_ticks: int | None, marker: str = "", log_path: Path | None = None
) -> bool:
    """SIGKILL what is left of a recorded server's process group once its API process ``pid`` has died;
    whether it did.

    Nothing is signalled unless every remaining member proves it is that server's: the server led its
    own group (``pgid == pid``), its pid is free (another program reusing it means the group ended long
    ago), each member started no earlier than the server (``start_ticks``, which must be known), and
    carries the server's ``marker`` in its environment or writes to the server's own ``log_path`` (one
    of the app's log files, checked by the caller). vLLM's engine processes rewrite their environment
    area with their process title, so the log file they inherited is their proof. A record without a
    start time and marker (an older one, or one written by hand) signals nothing."""
    if pgid != pid or start_ticks is None or not marker:
        return False
    if proc_start_ticks(pid) is not None:
        return False  # the pid is in use again: not our group any more
    members = group_members(pgid)
    if not members:
        return False
    for member in members:
        if (proc_start_ticks(member) or -1) < start_ticks:
            return False
        if not carries_marker(member, marker) and not (log_path is not None and writes_to(member, log_path)):
            return False
    signal_group(pgid, signal.SIGKILL)
    wait_group_gone(pgid, 5.0)
    return True
