"""Real inputs (tests/fixtures/compose/corpus, sources in its README) and the facts each must keep,
read through the CLI a user runs: ``llm-dyno profile import FILE --dry-run``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS = Path(__file__).parents[2] / "fixtures" / "compose" / "corpus"


def _import(tmp_path: Path, path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "VLLM_API_KEY", "MODEL")}
    env["LLM_DYNO_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "profile", "import", str(path), "--dry-run", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done, (yaml.safe_load(done.stdout) if done.returncode == 0 else None)


def test_dotenv_recipe(tmp_path: Path) -> None:
    done, p = _import(tmp_path, CORPUS / "dotenv-recipe" / "docker-compose.yml")
    assert done.returncode == 0, done.stderr
    d = p["docker"]
    assert d["shm_size"] == "32g"
    assert p["args"] == [
        *("--max-model-len", "65536", "--quantization", "mxfp4"),
        *("--api-key", "${VLLM_API_KEY}"),
    ]
    assert p["model"] == "/models/gpt-oss-120b"
    assert d["volumes"] == [
        "/data/models:/models",
        "/data/models:/data/models:ro",  # one host folder twice: both kept
        "dotenv-recipe_hf_cache:/root/.cache/huggingface",
    ]
    assert p["env"] == {
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "NCCL_P2P_DISABLE": "1",
        "HUGGING_FACE_HUB_TOKEN": "${HF_TOKEN}",
        "CUDA_VISIBLE_DEVICES": "0,1",
    }
    assert d["network"] == "dotenv-recipe_default" and d["network_aliases"] == ["vllm"]
    assert d["ulimits"] == {"memlock": "-1", "stack": "67108864"}
    assert d["logging"] == {"driver": "json-file", "options": {"max-size": "50m", "max-file": "3"}}
    assert p["gpus"] == "all"
    assert "127.0.0.1 only" in done.stderr  # the loopback bind is said, not silent


def test_webui_stack(tmp_path: Path) -> None:
    done, p = _import(tmp_path, CORPUS / "webui-stack" / "compose.yaml")
    assert done.returncode == 0, done.stderr
    assert p["model"] == "Qwen/Qwen3-0.6B" and p["args"] == ["--api-key", "${VLLM_API_KEY}"]
    d = p["docker"]
    assert d["entrypoint"] == ["vllm", "serve"]
    assert d["volumes"] == [f"{CORPUS / 'webui-stack' / 'hf'}:/root/.cache/huggingface"]
    assert d["network"] == "webui-stack_default" and d["network_aliases"] == ["vllm"]


def test_script_entry(tmp_path: Path) -> None:
    done, p = _import(tmp_path, CORPUS / "script-entry.yml")
    assert done.returncode == 0, done.stderr
    assert p["model"] == "Intel/neural-chat-7b-v3-3" and p["model_flag"] is True
    assert p["args"] == ["--host", "0.0.0.0", "--port", "80"]  # noqa: S104
    assert p["pre_start"] == "cd / && export VLLM_CPU_KVCACHE_SPACE=40 &&"
    assert "pre_start" in done.stderr


def test_extends_refused(tmp_path: Path) -> None:
    done, _ = _import(tmp_path, CORPUS / "extends.yml")
    assert done.returncode != 0
    # extends is followed now (issue 23); the base file of this layout is not in the corpus
    assert "extends: file docker-compose.base.yml not found" in done.stderr
    assert "docker compose config" in done.stderr
    assert "has no image" not in done.stderr and "Traceback" not in done.stderr


def test_nginx_docs(tmp_path: Path) -> None:
    done, p = _import(tmp_path, CORPUS / "nginx-docs.sh")
    assert done.returncode == 0, done.stderr
    d = p["docker"]
    assert d["network"] == "vllm_nginx" and d["shm_size"] == "10.24gb" and d["ports"] == ["8081:8000"]
    assert d["volumes"] == ["~/.cache/huggingface/:/root/.cache/huggingface/"]
    assert p["gpus"] == [0] and p["model"] == "meta-llama/Llama-2-7b-chat-hf" and "args" not in p
    assert p["docker"]["container_name"] == "vllm0"  # the first server of the block
    assert "docker network create vllm_nginx" in done.stderr and "mkdir -p" in done.stderr
    assert "docker run -itd --ipc host --network vllm_nginx --gpus device=1" in done.stderr
    assert "not imported" in done.stderr


def test_trailing_backslash_and_next_command(tmp_path: Path) -> None:
    done, p = _import(tmp_path, CORPUS / "quickstart-trailing.sh")
    assert done.returncode == 0, done.stderr
    assert p["args"] == ["--max_model_len", "1024", "--gpu_memory_utilization", "0.7"]
    assert "docker logs -f vllm" in done.stderr


def test_pwd_and_inline_comment(tmp_path: Path) -> None:
    done, p = _import(tmp_path, CORPUS / "pwd-comments.sh")
    assert done.returncode == 0, done.stderr
    assert p["args"] == ["--max_model_len", "1024"]
    assert p["docker"]["network"] == "host"
    assert p["docker"]["volumes"] == [f"{os.getcwd()}/vllm_root_cache:/root/.cache"]  # issue 29
    assert "$(pwd)" in done.stderr and "mounted as a shell would" in done.stderr


@pytest.mark.parametrize("runtime", ["docker"])
def test_serve_line_as_docker(tmp_path: Path, runtime: str) -> None:
    done, p = _import(tmp_path, CORPUS / "serve-line.sh", "--runtime", runtime)
    assert done.returncode == 0, done.stderr
    d = p["docker"]
    assert d["ports"] == ["8000:8000"] and p["gpus"] == "all"
    assert d["volumes"] == ["~/.cache/huggingface:/root/.cache/huggingface"]
    assert p["args"][-4:] == ["--api-key", "${VLLM_API_KEY}", "--port", "8000"]


def test_unset_variables_are_printed_when_the_import_fails(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "docker-compose.yml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
        "    command: ${MODEL} --max-model-len ${MAX_LEN}\n"
    )
    done, _ = _import(tmp_path, folder / "docker-compose.yml")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "warning: " in done.stderr and "$MODEL is not set" in done.stderr
    assert "$MAX_LEN is not set" in done.stderr
    assert "error:" in done.stderr and ".env" in done.stderr
    assert "--max-model-len ''" not in done.stderr


def test_plan_prints_every_warning(tmp_path: Path) -> None:
    """``llm-dyno plan NAME`` says what the launch will warn about, as comments, then the command."""
    home = tmp_path / "home"
    # the recipe's --api-key ${VLLM_API_KEY}: an unset key refuses the plan (tests/test_secrets_launch.py)
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "VLLM_API_KEY": "set-in-this-shell"}
    source = CORPUS / "dotenv-recipe" / "docker-compose.yml"
    cmd = [sys.executable, "-m", "llm_dyno"]
    imported = subprocess.run(
        [*cmd, "profile", "import", str(source), "--name", "recipe"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    done = subprocess.run(
        [*cmd, "plan", "recipe"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    # the notes come first as shell comments, so the whole output can be pasted into a shell
    warnings = [line for line in done.stdout.splitlines() if line.startswith("# warning: ")]
    assert any("127.0.0.1 only" in w for w in warnings)
    (command,) = [line for line in done.stdout.splitlines() if not line.startswith("#")]
    assert command.startswith("docker run ")
    for expected in ("--network dotenv-recipe_default", "--log-opt max-size=50m", "-p 127.0.0.1:8000:8000"):
        assert expected in done.stdout
    assert done.stdout.count("-v /data/models:") == 2  # both mounts of one folder
