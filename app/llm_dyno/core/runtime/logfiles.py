"""Where server logs are kept: one file per run under ``data_dir()/logs``, named after the profile.

Both runtimes write here (the process backend while the server runs, the Docker backend when the
container ends) and every reader finds a profile's latest log here, so the naming lives in one place.
"""

from __future__ import annotations

from pathlib import Path

from llm_dyno.core.paths import data_dir
from llm_dyno.core.profiles.store import file_stem


def logs_dir() -> Path:
    """Folder of server log files."""
    return data_dir() / "logs"


def log_path(profile_name: str, run_id: str) -> Path:
    """The log file of one run of a profile (``run_id``: a timestamp, or a container id)."""
    return logs_dir() / f"{file_stem(profile_name)}-{run_id}.log"


def latest_log(profile_name: str, folder: Path | None = None) -> Path | None:
    """The newest log saved for a profile (None when there is none)."""
    folder = folder or logs_dir()
    if not folder.is_dir():
        return None
    prefix = file_stem(profile_name) + "-"
    logs = [p for p in folder.glob("*.log") if p.name.lower().startswith(prefix)]
    return max(logs, key=lambda p: p.stat().st_mtime) if logs else None
