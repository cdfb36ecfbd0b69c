"""Compose semantics: .env, env_file, project names and prefixes, relative paths, networks, the extra
service keys, command forms, and exports that mean what the app launches."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_dyno.core.errors import ImportFormatError
from llm_dyno.core.profiles.compose_project import normalize_project_name
from llm_dyno.core.profiles.exporters import to_compose, to_docker_run, to_vllm_serve
from llm_dyno.core.profiles.importers import ImportFailed, import_text


def _project(tmp_path: Path, compose: str, env: str | None = None, folder: str = "My-Proj") -> Path:
    base = tmp_path / folder
    base.mkdir()
    (base / "docker-compose.yml").write_text(textwrap.dedent(compose))
    if env is not None:
        (base / ".env").write_text(textwrap.dedent(env))
    return base


def _imp(base: Path, **kw: Any) -> Any:
    path = base / "docker-compose.yml"
    return import_text(path.read_text(), source=str(path), base_dir=base, **kw)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SHM", "LEN", "QUANT", "MODEL", "MODELS", "PORT", "COMPOSE_PROJECT_NAME", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


COMPOSE = """\
    services:
      vllm:
        image: vllm/vllm-openai:v0.11.0
        shm_size: ${SHM:-16g}
        command: ${MODEL:-Qwen/Qwen3-8B} --max-model-len ${LEN:-4096} --quantization ${QUANT:-fp8}
          --api-key ${VLLM_API_KEY} --port 8000
        ports: ["${PORT:-8000}:8000"]
        volumes:
          - ${MODELS:-./models}:/models
          - ${MODELS:-./models}:${MODELS:-/srv/models}:ro
          - ../cache:/root/.cache
          - hf_cache:/root/.cache/huggingface
          - weights:/weights
        env_file: [vllm.env, {path: missing.env, required: false}]
        environment:
          FROM_FILE_OVERRIDDEN: from-environment
      webui:
        image: ghcr.io/open-webui/open-webui:main
        environment:
          OPENAI_API_BASE_URL: http://vllm:8000/v1
    volumes:
      hf_cache: {}
      weights: {external: true}
    """


def test_dotenv_and_env_file_feed_the_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _project(
        tmp_path,
        COMPOSE,
        env="""\
        # the values the issue saw lost
        SHM=32g
        LEN=65536
        export QUANT="mxfp4"
        MODELS=/data/models  # a comment
        VLLM_API_KEY=sk-in-dotenv
        """,
    )
    (base / "vllm.env").write_text("CUDA_VISIBLE_DEVICES=1\nFROM_FILE_OVERRIDDEN=file\nQUOTED='a b'\n")
    monkeypatch.setenv("LEN", "131072")  # the environment wins over .env, as in Compose
    result = _imp(base)
    p = result.profile
    assert p.docker is not None
    assert p.docker.shm_size == "32g"
    assert p.args[:4] == ("--max-model-len", "131072", "--quantization", "mxfp4")
    # a secret reference stays a reference (read from the environment at launch, not from .env)
    assert p.args[4:6] == ("--api-key", "${VLLM_API_KEY}")
    assert "sk-in-dotenv" not in p.to_yaml()
    assert any("VLLM_API_KEY is set in .env" in w for w in result.warnings)
    assert p.docker.volumes[:2] == ("/data/models:/models", "/data/models:/data/models:ro")
    assert p.env == {"CUDA_VISIBLE_DEVICES": "1", "FROM_FILE_OVERRIDDEN": "from-environment", "QUOTED": "a b"}


def test_project_prefixes_relative_paths_and_network(tmp_path: Path) -> None:
    base = _project(tmp_path, COMPOSE)
    (base / "vllm.env").write_text("")
    result = _imp(base)
    d = result.profile.docker
    assert d is not None
    models = str(base.resolve() / "models")
    assert d.volumes == (
        f"{models}:/models",  # relative binds against the compose file's folder
        f"{models}:/srv/models:ro",  # the same host folder twice stays twice
        f"{tmp_path.resolve() / 'cache'}:/root/.cache",
        "my-proj_hf_cache:/root/.cache/huggingface",  # <project>_<volume>, project = folder, lower case
        "weights:/weights",  # external: its own name
    )
    assert d.project == "my-proj"
    assert d.network == "my-proj_default" and d.network_aliases == ("vllm",)
    assert any("127.0.0.1 only" in w and "docker.bind: file" in w for w in result.warnings)
    assert any("webui" not in w for w in result.warnings)


def test_unset_variables_are_named_when_the_import_fails(tmp_path: Path) -> None:
    base = _project(
        tmp_path,
        """\
        services:
          vllm:
            image: vllm/vllm-openai:v0.11.0
            command: ${MODEL} --max-model-len ${LEN}
        """,
    )
    with pytest.raises(ImportFailed) as exc:
        _imp(base)
    text = str(exc.value)
    assert "$MODEL" in text and "not set" in text and ".env" in text
    assert "--max-model-len ''" not in text
    assert any("$MODEL is not set" in w for w in exc.value.warnings)
    assert any("$LEN is not set" in w for w in exc.value.warnings)
    (base / ".env").write_text("MODEL=Qwen/Qwen3-8B\nLEN=8192\n")
    assert _imp(base).profile.args == ("--max-model-len", "8192")


def test_project_name_from_name_key_and_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _project(
        tmp_path,
        """\
        name: Stack.One
        services:
          llm:
            image: vllm/vllm-openai:v0.11.0
            command: m
            volumes: [cache:/c]
        volumes:
          cache: {name: "${CACHE_NAME:-shared_cache}"}
        """,
    )
    d = _imp(base).profile.docker
    assert d is not None and d.project == "stackone" and d.network == "stackone_default"
    assert d.volumes == ("shared_cache:/c",)
    (base / "docker-compose.yml").write_text(
        (base / "docker-compose.yml").read_text().replace("name: Stack.One\n", "")
    )
    monkeypatch.setenv("COMPOSE_PROJECT_NAME", "fromenv")
    d = _imp(base).profile.docker
    assert d is not None and d.project == "fromenv"
    assert normalize_project_name("_My Proj.2") == "myproj2"


def test_service_keys_kept(tmp_path: Path) -> None:
    base = _project(
        tmp_path,
        """\
        services:
          llm:
            image: vllm/vllm-openai:v0.11.0
            command: m
            user: "1000:1000"
            working_dir: /work
            labels: ["traefik.enable=true"]
            ulimits: {memlock: -1, nofile: {soft: 1024, hard: 2048}}
            logging: {driver: json-file, options: {max-size: 10m, max-file: "3"}}
            networks:
              backend: {aliases: [llm-api]}
        networks:
          backend: {}
        """,
    )
    result = _imp(base)
    d = result.profile.docker
    assert d is not None
    assert (d.user, d.working_dir, d.labels) == ("1000:1000", "/work", {"traefik.enable": "true"})
    assert d.ulimits == {"memlock": "-1", "nofile": "1024:2048"}
    assert d.logging is not None and d.logging.options == {"max-size": "10m", "max-file": "3"}
    assert d.network == "my-proj_backend" and d.network_aliases == ("llm", "llm-api")
    assert not any("not kept" in w for w in result.warnings)
    again = import_text(to_compose(result.profile))
    assert again.profile == result.profile


def test_extends_of_a_missing_file_is_refused_with_a_way_out(tmp_path: Path) -> None:
    base = _project(
        tmp_path,
        """\
        services:
          llm:
            extends: {file: common.yml, service: vllm}
            command: m
        """,
    )
    with pytest.raises(ImportFormatError) as exc:
        _imp(base)
    assert "extends: file common.yml not found" in str(exc.value) and "config" in str(exc.value)
    assert "build the image" not in str(exc.value)


@pytest.mark.parametrize(
    ("command", "entrypoint", "model", "args", "pre_start"),
    [
        ("serve Qwen/Qwen3-8B --port 8000", ("vllm", "serve"), "Qwen/Qwen3-8B", ("--port", "8000"), None),
        (
            '["bash", "-c", "pip install -q x && vllm serve Qwen/Qwen3-8B --port 8080"]',
            None,
            "Qwen/Qwen3-8B",
            ("--port", "8080"),
            "pip install -q x &&",
        ),
        (
            '["/bin/sh", "-c", "exec python3 -m vllm.entrypoints.openai.api_server --model m; sleep 1"]',
            ("python3", "-m", "vllm.entrypoints.openai.api_server"),
            "m",
            (),
            None,
        ),
    ],
)
def test_command_forms(command: str, entrypoint: Any, model: str, args: Any, pre_start: str | None) -> None:
    text = (
        "services:\n  llm:\n    image: my/image:1\n    ports: ['8080:8080', '8000:8000']\n"
        f"    command: {command}\n"
    )
    p = import_text(text).profile
    assert p.docker is not None and p.docker.entrypoint == entrypoint
    assert (p.model, p.args, p.pre_start) == (model, args, pre_start)


def test_exports_expand_secrets_and_home() -> None:
    text = """\
        services:
          llm:
            image: vllm/vllm-openai:v0.11.0
            command: m --api-key ${VLLM_API_KEY} --port 8000
            environment: {HF_TOKEN: "${HF_TOKEN}"}
            ports: ["8000:8000"]
            volumes: ["~/.cache/huggingface:/root/.cache/huggingface", "hf:/hf"]
        volumes: {hf: {}}
        """
    p = import_text(textwrap.dedent(text)).profile
    compose = to_compose(p)
    assert "${VLLM_API_KEY}" in compose and "$${VLLM_API_KEY}" not in compose
    doc = yaml.safe_load(compose)
    assert doc["volumes"] == {"hf": {"name": "hf"}}  # declared, or Compose rejects the file
    assert doc["services"]["llm"]["ports"] == ["127.0.0.1:8000:8000"]  # the real bind
    run = to_docker_run(p)
    assert '--api-key "${VLLM_API_KEY}"' in run and "'${VLLM_API_KEY}'" not in run
    assert "-v ~/" in run and "'~" not in run
    serve = to_vllm_serve(p.with_changes(runtime="process", docker=None, process={"executable": "vllm"}))
    assert '"${VLLM_API_KEY}"' in serve
    # a shell fills the references in: run the lines through one with the variable set
    env = {**os.environ, "VLLM_API_KEY": "sk-test", "HOME": "/home/u"}
    for line in (run, serve):
        body = line.split("\n", 1)[1].replace("\\\n", " ")
        words = _shell_words(body, env)
        assert "sk-test" in words and "${VLLM_API_KEY}" not in words
    assert any(w.startswith("/home/u/.cache/huggingface:") for w in _shell_words(run.split("\n", 1)[1], env))
    assert import_text(compose).profile == p and import_text(run).profile == p


def _shell_words(line: str, env: dict[str, str]) -> list[str]:
    import subprocess

    done = subprocess.run(
        ["bash", "-c", "set -- " + line.replace("\\\n", " ") + '\nprintf "%s\\n" "$@"'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_pasted_lines_end_where_the_shell_ends_them() -> None:
    text = """docker run --gpus all -p 8000:8000 \\
      vllm/vllm-openai:v0.11.0 \\
      --model Qwen/Qwen3-8B --max-model-len 4096 \\

    docker logs -f vllm
    """
    result = import_text(text)
    assert result.profile.args == ("--max-model-len", "4096")
    assert any("docker logs -f vllm" in w and "not part of it" in w for w in result.warnings)
    for tail in ("; docker logs -f x", "&& docker logs -f x", "| tee log", "# the port"):
        r = import_text(f"vllm serve m --port 8000 {tail}")
        assert r.profile.args == ("--port", "8000"), tail
        assert tail.startswith("#") or any(tail.split()[0] in w for w in r.warnings)
    pwd = import_text("docker run -v $(pwd)/models:/models img m")
    # the folder the shell would mount (issue 29), not a volume named $(pwd)/models
    assert pwd.profile.docker is not None and pwd.profile.docker.volumes == (f"{os.getcwd()}/models:/models",)
    assert any("$(pwd)" in w and "mounted as a shell would" in w for w in pwd.warnings)


def test_attached_secret_flag_exports_as_a_reference() -> None:
    p = import_text("docker run -p 8000:8000 vllm/vllm-openai:v0.11.0 m --api-key=${VLLM_API_KEY}").profile
    assert p.args == ("--api-key=${VLLM_API_KEY}",)
    compose = to_compose(p)
    assert "--api-key=${VLLM_API_KEY}" in compose and "$$" not in compose
    run = to_docker_run(p)
    assert '--api-key="${VLLM_API_KEY}"' in run
    words = _shell_words(run.split("\n", 1)[1], {**os.environ, "VLLM_API_KEY": "sk-x"})
    assert "--api-key=sk-x" in words
    assert import_text(compose).profile == p and import_text(run).profile == p
