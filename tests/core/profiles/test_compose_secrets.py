"""Compose ``secrets:`` (issue 23): imported through the CLI, launched on a real engine, read back inside
the container at /run/secrets/…, as Docker Compose v2 puts them there (docker/compose
pkg/compose/create.go ``buildContainerSecretMounts``, secrets.go ``injectSecrets``): a ``file:`` secret
is the host file bound read-only; an ``environment:`` secret is a file written into the created
container before it starts (mode 0444 unless ``mode:``). The environment secret's value is in no file
under the data folder, no label, no argv, no environment of the container and not in the plan."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest_docker import free_port
from tests.support.cli import cli_in as _cli
from tests.support.images import TINY_IMAGE

COMPOSE = """\
services:
  vllm:
    image: {image}
    entrypoint: ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]
    command: ["tiny", "--port", "8000"]
    ports: ["{port}:8000"]
    volumes: ["/usr:/usr:ro"]
    secrets:
      - hf_file
      - source: api_env
        target: api_key
        mode: 0440
        uid: "1005"
        gid: "1006"
      - source: api_env
        target: /etc/dyno/copy
secrets:
  hf_file:
    file: ./secrets/hf.txt
  api_env:
    environment: WT23_API_SECRET
"""

VALUE = "sk-wt23-secret-from-env-" + uuid.uuid4().hex[:12]
FILE_VALUE = "file-secret-body-wt23\n"


def _project(tmp_path: Path, port: int, text: str = COMPOSE) -> Path:
    folder = tmp_path / "proj"
    (folder / "secrets").mkdir(parents=True)
    (folder / "secrets" / "hf.txt").write_text(FILE_VALUE)
    (folder / "docker-compose.yml").write_text(text.format(image=TINY_IMAGE, port=port))
    return folder / "docker-compose.yml"


def _base() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "WT23_API_SECRET"}


@pytest.mark.docker
def test_secrets_are_files_in_the_launched_container(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    compose = _project(tmp_path, free_port())
    home, name = tmp_path / "home", f"wt23sec{uuid.uuid4().hex[:6]}"
    imported = _cli(home, _base(), "profile", "import", str(compose), "--name", name)
    assert imported.returncode == 0, imported.stderr
    assert "secrets" not in imported.stderr  # read, not "not kept"
    env = {**_base(), "WT23_API_SECRET": VALUE}
    planned = _cli(home, env, "plan", name, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["container"]["mounts"] == [
        {
            "Target": "/run/secrets/hf_file",
            "Source": str(tmp_path / "proj" / "secrets" / "hf.txt"),
            "Type": "bind",
            "ReadOnly": True,
        }
    ]
    assert plan["files"] == [
        {
            "path": "/run/secrets/api_key",
            "variable": "WT23_API_SECRET",
            "mode": "0440",
            "uid": 1005,
            "gid": 1006,
        },
        {"path": "/etc/dyno/copy", "variable": "WT23_API_SECRET", "mode": "0444"},
    ]
    try:
        launched = _cli(home, env, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})

        def read(path: str) -> tuple[int, bytes]:
            code, out = found.exec_run(["/usr/bin/cat", path])
            return int(code), bytes(out)

        assert read("/run/secrets/hf_file") == (0, FILE_VALUE.encode())
        assert read("/run/secrets/api_key") == (0, VALUE.encode())
        assert read("/etc/dyno/copy") == (0, VALUE.encode())
        code, modes = found.exec_run(
            [
                "/usr/bin/python3",
                "-c",
                "import os,sys; s=[os.stat(p) for p in sys.argv[1:]];"
                " print(*(f'{x.st_mode & 0o777:o}:{x.st_uid}:{x.st_gid}' for x in s))",
                "/run/secrets/api_key",
                "/etc/dyno/copy",
            ]
        )
        assert (code, modes.decode().split()) == (0, ["440:1005:1006", "444:0:0"])  # mode and owner
        # the file secret is read-only inside, as Compose binds it
        code, _ = found.exec_run(["/usr/bin/touch", "/run/secrets/hf_file"])
        assert code != 0
        attrs = found.attrs
        (mount,) = [m for m in attrs["Mounts"] if m["Destination"] == "/run/secrets/hf_file"]
        assert (mount["Type"], mount["RW"]) == ("bind", False)
        assert attrs["HostConfig"]["Mounts"][0]["Target"] == "/run/secrets/hf_file"
        inspected = json.dumps(attrs)  # labels, argv, environment, everything docker inspect shows
        assert VALUE not in inspected
        logged = _cli(home, env, "logs", name)
    finally:
        _cli(home, env, "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)
    assert VALUE not in planned.stdout + launched.stdout + launched.stderr + logged.stdout + logged.stderr
    assert [str(p) for p in home.rglob("*") if p.is_file() and VALUE.encode() in p.read_bytes()] == []
    assert "WT23_API_SECRET" in (home / "config" / "profiles" / f"{name}.yaml").read_text()


@pytest.mark.docker
def test_an_unset_secret_variable_refuses_the_launch(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    compose = _project(tmp_path, free_port())
    home, name = tmp_path / "home", f"wt23nosec{uuid.uuid4().hex[:6]}"
    assert _cli(home, _base(), "profile", "import", str(compose), "--name", name).returncode == 0
    planned = _cli(home, _base(), "plan", name)
    assert "read from WT23_API_SECRET, which is not set: launch refuses" in planned.stdout
    try:
        launched = _cli(home, _base(), "launch", name, "--wait", "--timeout", "60")
        made = docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"})
    finally:
        _cli(home, _base(), "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)
    assert launched.returncode != 0 and "Traceback" not in launched.stderr
    assert "needs the environment variable WT23_API_SECRET, which is not set" in launched.stderr
    assert made == []  # refused before the container was created


@pytest.mark.parametrize(
    ("declared", "message", "line"),
    [
        ("  api_env:\n    external: true\n", "secret 'api_env' uses external:, which only Swarm", 21),
        ("  api_env:\n    name: x\n", "secret 'api_env' has neither file: nor environment:", 20),
        ("  other:\n    environment: X\n", "secret 'api_env' is not declared under the top-level", 10),
    ],
)
def test_secrets_compose_refuses_are_refused_naming_the_line(
    tmp_path: Path, declared: str, message: str, line: int
) -> None:
    text = COMPOSE.split("  api_env:\n")[0] + declared
    compose = _project(tmp_path, 8000, text)
    result = _cli(tmp_path / "home", _base(), "profile", "import", str(compose))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert message in result.stderr
    assert f"docker-compose.yml:{line}" in result.stderr
    assert not (tmp_path / "home" / "config" / "profiles").exists() or not list(
        (tmp_path / "home" / "config" / "profiles").iterdir()
    )


# compose-go's loader tests (loader/tests/secrets_test.go), each service given a command (a vLLM service
# names its model) and, where the test leaves it undeclared, its secret declared (Compose's `up` refuses
# an undeclared one: "refers to undefined secret")
SERVICE_SECRETS = """\
name: test
services:
  foo:
    image: alpine
    command: [m]
    secrets:
      - source: secret1
        target: /run/secrets/secret1
      - source: secret2
        target: my_secret
        uid: '103'
        gid: '103'
        mode: 0440
secrets:
  secret1:
    file: ./secret_data
  secret2:
    {secret2}
"""
MODE = """\
name: test
services:
  foo:
    image: alpine
    command: [m]
    secrets:
      - source: server-certificate
        target: server.cert
        mode: {mode}
secrets:
  server-certificate:
    environment: CERT
"""


def _imported(tmp_path: Path, text: str) -> dict[str, Any]:
    import yaml

    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "compose.yaml").write_text(text)
    home = tmp_path / "home"
    result = _cli(home, _base(), "profile", "import", str(folder / "compose.yaml"), "--name", "p")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = yaml.safe_load((home / "config" / "profiles" / "p.yaml").read_text())
    return data


def test_compose_go_service_secrets(tmp_path: Path) -> None:
    data = _imported(tmp_path, SERVICE_SECRETS.format(secret2="environment: SECRET2"))
    assert data["docker"]["secrets"] == [
        {"target": "/run/secrets/secret1", "file": str(tmp_path / "proj" / "secret_data")},
        {"target": "/run/secrets/my_secret", "environment": "SECRET2", "mode": 0o440, "uid": 103, "gid": 103},
    ]


def test_compose_go_external_secret_is_refused_as_compose_up_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "compose.yaml").write_text(SERVICE_SECRETS.format(secret2="external: true"))
    result = _cli(tmp_path / "home", _base(), "profile", "import", str(tmp_path / "proj" / "compose.yaml"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "compose.yaml:18, field 'secrets.secret2.external'" in result.stderr
    assert "unsupported external secret" in result.stderr


@pytest.mark.parametrize("mode", ['"0440"', "0o440", "0440"])
def test_compose_go_secret_file_mode(tmp_path: Path, mode: str) -> None:
    data = _imported(tmp_path, MODE.format(mode=mode))
    assert data["docker"]["secrets"] == [
        {"target": "/run/secrets/server.cert", "environment": "CERT", "mode": 0o440}
    ]


def test_compose_export_keeps_the_secrets_and_docker_run_refuses(tmp_path: Path) -> None:
    import yaml

    compose = _project(tmp_path, 8000)
    home = tmp_path / "home"
    assert _cli(home, _base(), "profile", "import", str(compose), "--name", "a").returncode == 0
    exported = _cli(home, _base(), "profile", "export", "a", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    again = tmp_path / "again"
    again.mkdir()
    (again / "compose.yaml").write_text(exported.stdout)
    result = _cli(home, _base(), "profile", "import", str(again / "compose.yaml"), "--name", "b")
    assert result.returncode == 0, result.stderr

    def secrets(name: str) -> Any:
        return yaml.safe_load((home / "config" / "profiles" / f"{name}.yaml").read_text())["docker"][
            "secrets"
        ]

    assert (
        secrets("b")
        == secrets("a")
        == [
            {"target": "/run/secrets/hf_file", "file": str(tmp_path / "proj" / "secrets" / "hf.txt")},
            {
                "target": "/run/secrets/api_key",
                "environment": "WT23_API_SECRET",
                "mode": 0o440,
                "uid": 1005,
                "gid": 1006,
            },
            {"target": "/etc/dyno/copy", "environment": "WT23_API_SECRET"},
        ]
    )
    line = _cli(home, _base(), "profile", "export", "a", "--format", "docker-run")
    assert line.returncode != 0 and "Traceback" not in line.stderr
    assert "which docker run has no option for" in line.stderr and line.stdout == ""
