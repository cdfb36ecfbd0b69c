"""Compose import: the founding compose verbatim, compose features, and export → import equality."""

from __future__ import annotations

import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_dyno.core.errors import ImportFormatError
from llm_dyno.core.profiles.exporters import to_compose
from llm_dyno.core.profiles.importers import import_text

FOUNDING = Path(__file__).parent / "fixtures" / "founding-compose.yml"
SCRIPT = (
    "set -e\npip install xxhash -q\npython3 /patches/patch_genesis_unified.py\n"
    'python3 /patches/patch_tolist_cudagraph.py\nexec vllm serve "$@"\n'
)
FLAGS = shlex.split(
    "--served-model-name qwen3.6-27b-autoround --quantization auto_round --dtype float16 "
    "--tensor-parallel-size 1 --max-model-len 75000 --gpu-memory-utilization 0.97 --max-num-seqs 1 "
    "--max-num-batched-tokens 2048 --kv-cache-dtype fp8_e5m2 --language-model-only --trust-remote-code "
    "--reasoning-parser qwen3 --enable-auto-tool-choice --tool-call-parser qwen3_coder "
    "--enable-prefix-caching --enable-chunked-prefill "
    '--speculative-config \'{"method":"mtp","num_speculative_tokens":3}\' --host 0.0.0.0 --port 8000'
)


def _founding() -> Any:
    return import_text(FOUNDING.read_text(), source=str(FOUNDING))


def test_founding_compose_imports_verbatim() -> None:
    result = _founding()
    p = result.profile
    assert result.source_kind == "compose"
    assert result.service == "vllm-qwen36-27b"
    # the one warning: the port is published on loopback, not on every interface as in the file
    assert len(result.warnings) == 1 and "8020:8000" in result.warnings[0]
    assert "127.0.0.1" in result.warnings[0] and "docker.bind: file" in result.warnings[0]
    assert p.name == "vllm-qwen36-27b"
    assert p.runtime.value == "docker"
    assert p.model == "/root/.cache/huggingface/vllm-qwen36-27b-int4"
    assert p.model_flag is True
    assert list(p.args) == FLAGS
    assert p.vllm_argv()[:2] == ["--model", "/root/.cache/huggingface/vllm-qwen36-27b-int4"]
    d = p.docker
    assert d is not None
    assert (
        d.image == "vllm/vllm-openai@sha256:9bba4628a3b943e0dd33caefb94b811569ba1e97bdf23bee19a265c31b947ccb"
    )
    assert d.image_digest == "sha256:9bba4628a3b943e0dd33caefb94b811569ba1e97bdf23bee19a265c31b947ccb"
    assert d.container_name == "vllm-qwen36-27b"
    assert d.restart == "no"
    assert d.ports == ("8020:8000",)
    assert d.volumes == (
        "/run/media/will/Storage/models:/root/.cache/huggingface",
        "/home/will/genesis-vllm-patches/patch_genesis_unified.py:/patches/patch_genesis_unified.py:ro",
        "/home/will/genesis-vllm-patches/patch_tolist_cudagraph.py:/patches/patch_tolist_cudagraph.py:ro",
    )
    assert d.shm_size == "16gb"
    assert d.ipc == "host"
    assert d.entrypoint == ("/bin/bash", "-c", SCRIPT, "--")
    assert p.gpus == "all"
    assert p.env == {
        "HUGGING_FACE_HUB_TOKEN": "${HF_TOKEN:-}",  # the reference, not the token
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "NCCL_CUMEM_ENABLE": "0",
        "NCCL_P2P_DISABLE": "1",
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb=512",
        "VLLM_FLOAT32_MATMUL_PRECISION": "high",
        "VLLM_USE_FLASHINFER_SAMPLER": "1",
        "OMP_NUM_THREADS": "1",
        "CUDA_DEVICE_MAX_CONNECTIONS": "8",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1",
        "VLLM_MARLIN_USE_ATOMIC_ADD": "1",
    }
    assert list(p.env) == [
        line.split("=", 1)[0]
        for line in yaml.safe_load(FOUNDING.read_text())["services"]["vllm-qwen36-27b"]["environment"]
    ]
    engine = p.engine()
    assert engine.num_speculative_tokens == 3
    assert engine.max_model_len == 75000


def test_founding_secret_reference_is_not_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_realsecretvalue")
    p = _founding().profile
    assert p.env["HUGGING_FACE_HUB_TOKEN"] == "${HF_TOKEN:-}"
    assert "hf_realsecretvalue" not in p.to_yaml()


def test_founding_export_import_is_equal() -> None:
    p = _founding().profile
    exported = to_compose(p)
    again = import_text(exported, source="exported.yml")
    assert again.profile == p
    assert again.warnings == ()


def _service_meaning(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """What docker compose would run: interpolation of `$$` applied, list environment as a mapping."""
    s = doc["services"][name]

    def unescape(v: Any) -> Any:
        return v.replace("$$", "$") if isinstance(v, str) else v

    env = dict(item.split("=", 1) for item in s["environment"])
    return {
        "image": s["image"],
        "container_name": s["container_name"],
        "restart": str(s["restart"]),
        "ports": s["ports"],
        "volumes": s["volumes"],
        "environment": env,
        "shm_size": s["shm_size"],
        "ipc": s["ipc"],
        "deploy": s["deploy"],
        "entrypoint": [unescape(t) for t in s["entrypoint"]],
        "command": [str(unescape(t)) for t in s["command"]],
    }


def test_exported_compose_means_the_same() -> None:
    original = yaml.safe_load(FOUNDING.read_text())
    exported = yaml.safe_load(to_compose(_founding().profile))
    assert list(exported["services"]) == ["vllm-qwen36-27b"]
    # the export says what the app launches: the port on loopback (docker.bind: loopback)
    original["services"]["vllm-qwen36-27b"]["ports"] = ["127.0.0.1:8020:8000"]
    assert _service_meaning(exported, "vllm-qwen36-27b") == _service_meaning(original, "vllm-qwen36-27b")
    assert exported["services"]["vllm-qwen36-27b"]["network_mode"] == "bridge"
    bound = import_text(FOUNDING.read_text(), bind="file").profile
    assert yaml.safe_load(to_compose(bound))["services"]["vllm-qwen36-27b"]["ports"] == ["8020:8000"]
    assert import_text(to_compose(bound)).profile == bound
    # the shell script's "$@" is escaped for compose in the export, and only there
    assert 'exec vllm serve "$$@"' in exported["services"]["vllm-qwen36-27b"]["entrypoint"][2]


def _imp(text: str, **kw: Any) -> Any:
    return import_text(textwrap.dedent(text), source="c.yml", **kw)


def test_interpolation_anchors_and_merge_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELS", "/data/models")
    monkeypatch.delenv("UNSET_PORT", raising=False)
    monkeypatch.setenv("EMPTY", "")
    result = _imp(
        """
        x-common: &common
          image: vllm/vllm-openai:v0.11.0
          ipc: host
          environment: &env
            HF_HUB_OFFLINE: "1"
            PRICE: "$$5"
        services:
          llm:
            <<: *common
            volumes: ["${MODELS}/hf:/root/.cache/huggingface"]
            ports: ["${UNSET_PORT:-8000}:8000", "1${EMPTY-9}:9", "${EMPTY:-7}:7"]
            command: Qwen/Qwen3-8B --max_model_len=${LEN:-4096} --port 8000
        """
    )
    p = result.profile
    assert p.docker is not None
    assert p.docker.image == "vllm/vllm-openai:v0.11.0"
    assert p.docker.ipc == "host"
    assert p.docker.volumes == ("/data/models/hf:/root/.cache/huggingface",)
    assert p.docker.ports == ("8000:8000", "1:9", "7:7")
    assert p.env == {"HF_HUB_OFFLINE": "1", "PRICE": "$5"}
    assert p.model == "Qwen/Qwen3-8B" and p.model_flag is False
    assert p.args == ("--max_model_len=4096", "--port", "8000")
    assert p.name == "llm"


def test_long_syntax_gpu_ids_and_secret_literal() -> None:
    result = _imp(
        """
        services:
          web:
            image: nginx
          llm:
            image: ghcr.io/me/custom:1
            entrypoint: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
            command: ["--model", "m", "--tensor-parallel-size", 2]
            environment:
              HF_TOKEN: hf_abcdefLITERAL
              VLLM_API_KEY: ${VLLM_API_KEY}
            ports:
              - target: 8000
                published: 8001
                host_ip: 127.0.0.1
            volumes:
              - type: bind
                source: /models
                target: /models
                read_only: true
              - type: volume
                source: cache
                target: /root/.cache
            shm_size: 1073741824
            deploy:
              resources:
                reservations:
                  devices:
                    - driver: nvidia
                      device_ids: ["0", "2"]
                      capabilities: [gpu]
        """
    )
    p = result.profile
    assert result.service == "llm"
    assert p.env == {"HF_TOKEN": "${HF_TOKEN}", "VLLM_API_KEY": "${VLLM_API_KEY}"}
    assert any("HF_TOKEN held a literal secret" in w for w in result.warnings)
    assert "hf_abcdefLITERAL" not in p.to_yaml()
    assert p.gpus == (0, 2)
    assert p.docker is not None
    assert p.docker.entrypoint == ("python3", "-m", "vllm.entrypoints.openai.api_server")
    assert p.docker.ports == ("127.0.0.1:8001:8000",)
    assert p.docker.volumes == ("/models:/models:ro", "cache:/root/.cache")
    assert p.docker.shm_size == "1073741824"
    assert p.model == "m" and p.model_flag is True
    assert p.args == ("--tensor-parallel-size", "2")


def test_gpus_all_runtime_nvidia_and_count() -> None:
    p = _imp(
        """
        services:
          a:
            image: vllm/vllm-openai:latest
            runtime: nvidia
            gpus: all
            command: ["m"]
        """
    ).profile
    assert p.gpus == "all" and p.docker is not None and p.docker.runtime == "nvidia"
    r = _imp(
        """
        services:
          a:
            image: vllm/vllm-openai:latest
            command: ["m"]
            deploy: {resources: {reservations: {devices: [{capabilities: [gpu], count: 2}]}}}
        """
    )
    assert r.profile.gpus == (0, 1)
    assert "GPU count 2 read as GPUs 0, 1" in r.warnings


def test_service_choice_and_unknown_flags() -> None:
    text = """
        services:
          one:
            image: vllm/vllm-openai:v1
            command: a --frobnicate 3
          two:
            image: vllm/vllm-openai:v1
            command: b
        """
    with pytest.raises(ImportFormatError) as exc:
        _imp(text)
    assert "one, two" in str(exc.value) and "--service" in str(exc.value)
    result = _imp(text, service="one", name="My profile")
    assert result.profile.name == "My profile"
    assert result.profile.model == "a"
    assert result.profile.args == ("--frobnicate", "3")
    assert "unknown vLLM flag --frobnicate (not in vLLM 0.32.0); kept" in result.warnings
    # two services pasted without their folder: no project network for siblings to find it on
    assert any("default bridge network" in w for w in result.warnings)
    assert _imp(text, service="two").profile.model == "b"


def test_command_starting_vllm_serve_becomes_entrypoint() -> None:
    result = _imp(
        """
        services:
          llm:
            image: nvcr.io/nvidia/pytorch:24.01
            command: vllm serve Qwen/Qwen3-8B --port 8000
        """
    )
    assert result.profile.docker is not None
    assert result.profile.docker.entrypoint == ("vllm", "serve")
    assert result.profile.model == "Qwen/Qwen3-8B"
    assert result.profile.args == ("--port", "8000")


def test_runtime_process_drops_container() -> None:
    result = import_text(FOUNDING.read_text(), runtime="process", executable="/opt/v/bin/vllm")
    p = result.profile
    assert p.runtime.value == "process" and p.docker is None
    assert p.process is not None and p.process.executable == "/opt/v/bin/vllm"
    assert "container settings were dropped" in " ".join(result.warnings)
