"""Shared setup for the runtime benchmarks: a tiny model, a temporary LLM_DYNO_HOME, a CPU profile."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "app"))

from tests.support import vllm_env  # noqa: E402

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime  # noqa: E402


def workspace(keep: str | None = None) -> Path:
    """A scratch folder, also used as LLM_DYNO_HOME so that state and logs stay out of the user's."""
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="llm-dyno-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["LLM_DYNO_HOME"] = str(folder / "home")
    return folder


def tiny_model(folder: Path, model: str | None = None) -> Path:
    """The model to serve: ``model`` if given, else a tiny one built into ``folder``."""
    if model:
        return Path(model)
    python, exe = vllm_env.python(), vllm_env.vllm_executable()
    if python is None or exe is None:
        sys.exit(vllm_env.missing_reason())
    dest = folder / "tiny-model"
    if not (dest / "config.json").exists():
        subprocess.run([str(python), str(vllm_env.TINYMODEL_SCRIPT), str(dest)], check=True, timeout=600)
    return dest


def cpu_profile(name: str, model: Path, folder: Path, port: int | None = None) -> Profile:
    """A process-runtime profile for a fast CPU server of ``model``."""
    exe = vllm_env.vllm_executable()
    if exe is None:
        sys.exit(vllm_env.missing_reason())
    args = (*vllm_env.FAST_ARGS, "--served-model-name", "tiny", "--max-model-len", "1024")
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model=str(model),
        args=(*args, "--port", str(port or vllm_env.free_port())),
        env=vllm_env.server_env(folder),
    )


def dyno_threads() -> list[str]:
    """Names of threads the runtime started that are still alive."""
    return [t.name for t in threading.enumerate() if t.name.startswith("llm-dyno-")]


def live_processes(marker: str) -> list[str]:
    """Processes whose command line contains ``marker`` (e.g. the model folder): orphans if any remain."""
    found: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(f"{entry.name}: {cmd[:120]}")
    return found
