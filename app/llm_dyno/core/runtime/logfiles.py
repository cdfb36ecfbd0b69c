"""Where server logs are kept: one file per run under ``data_dir()/logs``, named after the profile.

Both runtimes write here (the process backend while the server runs, the Docker backend when the
container ends) and every reader finds a profile's latest log here, so the naming lives in one place.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from llm_dyno.core.paths import data_dir
from llm_dyno.core.profiles.store import file_stem


def logs_dir() -> Path:
    """Folder of server log files."""
    return data_dir() / "logs"


# what follows "<stem>-" in a log's name: a launch time (process) or a short container id (docker);
# matching it exactly keeps profile "a" from taking "a-b"'s logs
_RUN_ID = r"(?:\d{8}-\d{6}|[0-9a-f]{12})"


def _log_stem(profile_name: str) -> str:
    """A profile's part of its log names: its file stem, plus a hash of the exact name when the name
    is not its own stem ("Fake A" → ``fake-a~1a2b3c4d``), so that profile "fake-a" never reads the
    logs of "Fake A" (nor the other way round)."""
    stem = file_stem(profile_name)
    if profile_name == stem:
        return stem
    return f"{stem}~{hashlib.sha256(profile_name.encode('utf-8')).hexdigest()[:8]}"


def log_path(profile_name: str, run_id: str) -> Path:
    """The log file of one run of a profile (``run_id``: a timestamp, or a container id)."""
    return logs_dir() / f"{_log_stem(profile_name)}-{run_id}.log"


def latest_log(profile_name: str, folder: Path | None = None) -> Path | None:
    """The newest log saved for a profile (None when there is none)."""
    folder = folder or logs_dir()
    if not folder.is_dir():
        return None
    own = re.compile(re.escape(_log_stem(profile_name)) + "-" + _RUN_ID + r"\.log")
    logs = [p for p in folder.glob("*.log") if own.fullmatch(p.name.lower())]
    return max(logs, key=lambda p: p.stat().st_mtime) if logs else None


def own_log_file(recorded: str) -> Path | None:
    """``recorded`` when it names one of the app's own log files (a regular file, not a link, in the
    logs folder), else None: the only log a leftover engine process may prove itself by."""
    path = Path(recorded)
    try:
        if path.is_symlink() or not path.is_file() or path.parent.resolve() != logs_dir().resolve():
            return None
        return path.resolve()
    except OSError:
        return None
