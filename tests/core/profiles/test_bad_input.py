"""Bad input gives an ImportFormatError naming the file, line and field, never a traceback."""

from __future__ import annotations

import textwrap

import pytest

from llm_dyno.core.errors import ImportFormatError
from llm_dyno.core.profiles.importers import import_text


def _error(text: str, **kw: str) -> ImportFormatError:
    with pytest.raises(ImportFormatError) as exc:
        import_text(textwrap.dedent(text), **kw)
    return exc.value


def test_empty_input() -> None:
    err = _error("  \n\n", source="x.txt")
    assert "empty" in str(err) and "x.txt" in str(err)


def test_malformed_yaml_names_file_and_line() -> None:
    err = _error(
        """\
        services:
          llm:
            image: vllm/vllm-openai
            command: [a, b
        """,
        source="bad.yml",
    )
    assert err.where is not None and err.where.file == "bad.yml" and err.where.line == 5
    assert str(err).startswith("bad.yml:5: not valid YAML")


def test_compose_without_vllm_lists_services() -> None:
    err = _error(
        """\
        services:
          web:
            image: nginx
          db:
            image: postgres
        """,
        source="c.yml",
    )
    assert "no service runs vLLM (services: web, db)" in str(err)
    assert err.where is not None and err.where.line == 1 and err.where.field == "services"
    assert "--service" in str(err)


def test_unknown_service() -> None:
    err = _error("services:\n  web:\n    image: nginx\n", service="llm")
    assert "no service 'llm'" in str(err) and "web" in str(err)


def test_bad_max_model_len_in_compose_points_at_command_item() -> None:
    err = _error(
        """\
        services:
          llm:
            image: vllm/vllm-openai:v1
            command:
              - m
              - --max-model-len
              - many
        """,
        source="c.yml",
    )
    assert "--max-model-len 'many'" in str(err)
    assert err.where is not None and err.where.file == "c.yml" and err.where.line == 6
    assert err.where.field == "services.llm.command[1]"


def test_bad_max_model_len_in_command_line() -> None:
    err = _error("vllm serve m \\\n  --port 8000 \\\n  --max-model-len many\n", source="cmd.sh")
    assert "--max-model-len 'many'" in str(err)
    assert err.where is not None and (err.where.file, err.where.line) == ("cmd.sh", 3)


def test_bad_shm_size_compose() -> None:
    err = _error(
        """\
        services:
          llm:
            image: vllm/vllm-openai:v1
            command: [m]
            shm_size: lots
        """,
        source="c.yml",
    )
    assert "'lots' is not a size" in str(err)
    assert err.where is not None and err.where.line == 5 and err.where.field == "services.llm.shm_size"


def test_bad_shm_size_docker_run() -> None:
    err = _error("docker run \\\n  --shm-size lots \\\n  img m\n", source="run.sh")
    assert "'lots' is not a size" in str(err)
    assert err.where is not None and (err.where.file, err.where.line, err.where.field) == (
        "run.sh",
        2,
        "--shm-size",
    )


def test_unbalanced_quotes() -> None:
    err = _error('vllm serve m \\\n  --speculative-config \'{"method": "ngram"}\n  --port 1\n', source="q.sh")
    assert "unbalanced quotes" in str(err)
    assert err.where is not None and err.where.line == 2


def test_unbalanced_quotes_in_compose_command_string() -> None:
    err = _error(
        """\
        services:
          llm:
            image: vllm/vllm-openai:v1
            command: "m --served-model-name 'oops"
        """,
        source="c.yml",
    )
    assert "unbalanced quotes" in str(err)
    assert err.where is not None and err.where.line == 4 and err.where.field == "services.llm.command"


def test_not_a_known_command() -> None:
    err = _error("kubectl apply -f x.yaml\n", source="k.sh")
    assert "not a compose file" in str(err) and "k.sh:1" in str(err)


def test_no_model() -> None:
    err = _error("vllm serve --port 8000\n")
    assert "no model found" in str(err)


def test_shell_script_without_a_server_line() -> None:
    err = _error(
        """\
        services:
          llm:
            image: vllm/vllm-openai:v1
            entrypoint: ["/bin/sh", "-c"]
            command: ["python3 /app/start.py"]
        """,
        source="c.yml",
    )
    assert "no model found" in str(err) or "no vllm serve arguments" in str(err)
    assert err.where is not None and err.where.line in (4, 5)


def test_gpu_uuid_rejected() -> None:
    err = _error("docker run --gpus device=GPU-1234 img m\n", source="r.sh")
    assert "UUIDs are not supported" in str(err)
    assert err.where is not None and err.where.field == "--gpus" and err.where.line == 1


def test_bad_interpolation() -> None:
    err = _error(
        """\
        services:
          llm:
            image: vllm/vllm-openai:${TAG:?set TAG to an image tag}
            command: [m]
        """,
        source="c.yml",
    )
    assert "set TAG to an image tag" in str(err)
    assert err.where is not None and err.where.line == 3 and err.where.field == "services.llm.image"


def test_bad_profile_name() -> None:
    err = _error("vllm serve m\n", name="!bad name")
    assert err.where is not None and err.where.field == "name"
