"""Import of pasted ``docker run`` and ``vllm serve`` lines."""

from __future__ import annotations

import pytest

from llm_dyno.core.profiles.exporters import to_docker_run, to_vllm_serve
from llm_dyno.core.profiles.importers import detect_kind, import_text

DOCKER_RUN = r"""
sudo docker run --rm -it --init --runtime nvidia --gpus '"device=0,1"' \
    -p 8000:8000 --publish=127.0.0.1:9000:9000 \
    -v ~/.cache/huggingface:/root/.cache/huggingface --volume /models:/models:ro \
    --mount type=bind,source=/patches,target=/patches,readonly \
    -e HF_TOKEN=hf_secretLITERAL -e VLLM_LOGGING_LEVEL=DEBUG --env HUGGING_FACE_HUB_TOKEN \
    --ipc=host --shm-size 16g --name qwen-box --restart unless-stopped --network host \
    vllm/vllm-openai:v0.11.0 \
    Qwen/Qwen3-8B --max-model-len 32768 \
    --speculative-config '{"method": "ngram", "num_speculative_tokens": 3}' \
    --api-key sk-literal --port 8000
"""


def test_docker_run_line() -> None:
    result = import_text(DOCKER_RUN)
    p = result.profile
    assert result.source_kind == "docker-run"
    assert p.name == "qwen-box"
    d = p.docker
    assert d is not None
    assert d.image == "vllm/vllm-openai:v0.11.0"
    assert d.runtime == "nvidia" and d.ipc == "host" and d.shm_size == "16g" and d.restart == "unless-stopped"
    assert d.ports == ("8000:8000", "127.0.0.1:9000:9000")
    assert d.volumes == (
        "~/.cache/huggingface:/root/.cache/huggingface",
        "/models:/models:ro",
        "/patches:/patches:ro",
    )
    assert d.entrypoint is None
    assert p.gpus == (0, 1)
    assert p.env == {
        "HF_TOKEN": "${HF_TOKEN}",
        "VLLM_LOGGING_LEVEL": "DEBUG",
        "HUGGING_FACE_HUB_TOKEN": "${HUGGING_FACE_HUB_TOKEN}",
    }
    assert p.model == "Qwen/Qwen3-8B" and not p.model_flag
    assert p.args == (
        "--max-model-len",
        "32768",
        "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 3}',
        "--api-key",
        "${VLLM_API_KEY}",
        "--port",
        "8000",
    )
    text = " ".join(result.warnings)
    assert "HF_TOKEN held a literal secret" in text
    assert "--api-key held a literal secret" in text
    assert p.docker is not None and p.docker.network == "host"
    assert "hf_secretLITERAL" not in p.to_yaml() and "sk-literal" not in p.to_yaml()


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [("all", "all"), ("2", (0, 1)), ('"device=3"', (3,)), ("device=0,2", (0, 2)), ("count=all", "all")],
)
def test_docker_gpus_forms(gpus: str, expected: object) -> None:
    p = import_text(f"docker run --gpus {gpus!r} img m").profile
    assert p.gpus == expected


def test_docker_entrypoint_and_python_launcher() -> None:
    p = import_text("docker run --entrypoint vllm my/image serve m --port 1").profile
    assert p.docker is not None and p.docker.entrypoint == ("vllm", "serve")
    assert (p.model, p.args) == ("m", ("--port", "1"))
    p = import_text("docker run img python3 -m vllm.entrypoints.openai.api_server --model m -tp 2").profile
    assert p.docker is not None and p.docker.entrypoint == (
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
    )
    assert (p.model, p.model_flag, p.args) == ("m", True, ("-tp", "2"))


def test_vllm_serve_line_with_assignments() -> None:
    text = """# my notes
    HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 HF_TOKEN=hf_xyz vllm serve ~/models/tiny \\
        --dtype float32 --enforce-eager \\
        --max_model_len=512 --port 8011
    """
    result = import_text(text, source="paste")
    p = result.profile
    assert result.source_kind == "vllm-serve"
    assert p.runtime.value == "process" and p.docker is None
    assert p.process is not None and p.process.executable == "vllm"
    assert p.env == {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_TOKEN": "${HF_TOKEN}"}
    assert p.model == "~/models/tiny" and p.name == "tiny"
    assert p.args == ("--dtype", "float32", "--enforce-eager", "--max_model_len=512", "--port", "8011")
    assert p.engine().max_model_len == 512
    assert p.notes == "Imported from 'paste' (vllm-serve)."


def test_python_module_form_and_executable() -> None:
    result = import_text(
        "python -m vllm.entrypoints.openai.api_server --model /m/x --port 8011", executable="/venv/bin/vllm"
    )
    p = result.profile
    assert p.model == "/m/x" and p.model_flag and p.args == ("--port", "8011")
    assert p.process is not None and p.process.executable == "/venv/bin/vllm"
    assert any("is run as 'vllm serve'" in w for w in result.warnings)
    p = import_text("/opt/venv/bin/vllm serve m").profile
    assert p.process is not None and p.process.executable == "/opt/venv/bin/vllm"


def test_vllm_serve_as_docker_gets_a_container_that_can_serve() -> None:
    result = import_text("vllm serve Qwen/Qwen3-8B --port 8011", runtime="docker")
    d = result.profile.docker
    assert d is not None and d.image == "vllm/vllm-openai:latest"
    assert d.ports == ("8011:8011",)
    assert d.volumes == ("~/.cache/huggingface:/root/.cache/huggingface",)
    assert result.profile.gpus == "all"
    assert any("names no container" in w and "every GPU" in w for w in result.warnings)
    local = import_text("vllm serve /models/tiny --host 127.0.0.1", runtime="docker")
    assert local.profile.docker is not None
    assert local.profile.docker.volumes == ("/models/tiny:/models/tiny:ro",)
    assert local.profile.docker.ports == ("8000:8000",)
    assert any("--host 127.0.0.1" in w for w in local.warnings)


def test_detect_kind() -> None:
    assert detect_kind("services:\n  a: {}\n") == "compose"
    assert detect_kind("# c\nversion: '3'\nservices: {}\n") == "compose"
    assert detect_kind("sudo docker run img m") == "docker-run"
    assert detect_kind("A=1 vllm serve m") == "vllm-serve"


def test_multiline_quoted_json_and_comments() -> None:
    text = """vllm serve m \\
      # a comment line between continued lines is skipped
      --speculative-config '{
        "method": "ngram",
        "num_speculative_tokens": 2}' --port 1
    """
    p = import_text(text).profile
    assert p.args[0] == "--speculative-config"
    assert p.engine().num_speculative_tokens == 2
    assert p.args[-2:] == ("--port", "1")


def test_cmdline_export_round_trip_of_shell_wrapper() -> None:
    text = """docker run --entrypoint /bin/sh img -c 'pip install x && exec vllm serve "$@"' -- m --port 1"""
    p = import_text(text, name="wrap").profile
    assert p.docker is not None
    assert p.docker.entrypoint == ("/bin/sh", "-c", 'pip install x && exec vllm serve "$@"', "--")
    assert (p.model, p.args) == ("m", ("--port", "1"))
    assert import_text(to_docker_run(p)).profile == p
    process = p.with_changes(runtime="process", docker=None, process={"executable": "vllm"})
    assert import_text(to_vllm_serve(process)).profile == process
