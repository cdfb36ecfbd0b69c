"""``llm-dyno plan NAME --json`` shows what ``llm-dyno launch NAME`` hands to Docker: the container the
launch creates on a real engine has the image, entrypoint, command, environment, mounts and ports the
plan printed (secrets excepted: the plan shows their references). Issue 23: ``image: ${SECRET_IMAGE}``
was asked of Docker literally, and a literal ``$${foo}`` was resolved again at launch (to nothing)."""

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

pytestmark = pytest.mark.docker

COMPOSE = """\
services:
  vllm:
    image: ${SECRET_IMAGE}
    entrypoint: ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]
    command: ["tiny", "--port", "8000", "--served-model-name", "$${foo}"]
    ports: ["${PORT}:8000"]
    volumes:
      - /usr:/usr:ro
      - ./models:/models:ro
      - /var/cache/anon
    tmpfs: /scratch
    environment:
      LITERAL: "$${foo}"
      PLAIN: "${PLAIN_VAR}"
      HF_TOKEN: ${HF_TOKEN}
    env_file: vllm.env
"""


def test_plan_json_is_the_container_launch_creates(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    folder = tmp_path / "proj"
    (folder / "models").mkdir(parents=True)
    (folder / "docker-compose.yml").write_text(COMPOSE)
    # a literal ${foo} in single quotes, and a multi-line double-quoted value, in the env file
    (folder / "vllm.env").write_text("\ufeffFROM_FILE='${foo}'\nTWO_LINES=\"a\nb\"\n")
    port = free_port()
    base = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "SECRET_IMAGE", "foo")}
    name = f"wt23plan{uuid.uuid4().hex[:6]}"
    home = tmp_path / "home"
    imported = _cli(
        home,
        {**base, "PORT": str(port), "PLAIN_VAR": "plain-value", "foo": "at-import"},
        *("profile", "import", str(folder / "docker-compose.yml"), "--name", name),
    )
    assert imported.returncode == 0, imported.stderr
    token = "hf_" + "x" * 34
    at_launch = {**base, "SECRET_IMAGE": TINY_IMAGE, "HF_TOKEN": token, "foo": "at-launch"}
    planned = _cli(home, at_launch, "plan", name, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)["container"]
    assert token not in planned.stdout  # the plan shows the secret's reference, never its value
    volumes: list[str] = []
    try:
        launched = _cli(home, at_launch, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})
        config, host = found.attrs["Config"], found.attrs["HostConfig"]
        volumes = [m["Name"] for m in found.attrs["Mounts"] if m["Type"] == "volume"]
    finally:
        _cli(home, at_launch, "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True, v=True)
        for volume in volumes:  # the anonymous volume Docker made for it
            for v in docker_client.volumes.list(filters={"name": volume}):
                v.remove(force=True)

    # image: the variable resolved, in the plan and at launch alike
    assert plan["image"] == TINY_IMAGE == config["Image"]
    assert plan["entrypoint"] == config["Entrypoint"] == ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]
    # the command: $${foo} is the literal ${foo}, resolved neither at import nor at launch
    assert plan["command"] == config["Cmd"] == ["tiny", "--port", "8000", "--served-model-name", "${foo}"]
    env = dict(e.split("=", 1) for e in config["Env"])
    assert plan["environment"] == {
        "FROM_FILE": "${foo}",
        "TWO_LINES": "a\nb",
        "LITERAL": "${foo}",
        "PLAIN": "plain-value",
        "HF_TOKEN": "${HF_TOKEN}",
    }
    for key, value in plan["environment"].items():
        assert env[key] == (token if key == "HF_TOKEN" else value), key
    assert (
        plan["volumes"]
        == host["Binds"]
        == ["/usr:/usr:ro", f"{folder / 'models'}:/models:ro", "/var/cache/anon"]
    )
    # the anonymous volume is one Docker made for this container, as Compose has it
    assert [m["Type"] for m in found.attrs["Mounts"] if m["Destination"] == "/var/cache/anon"] == ["volume"]
    assert plan["tmpfs"] == host["Tmpfs"] == {"/scratch": ""}
    assert plan["ports"] == {"8000/tcp": ["127.0.0.1", port]}
    assert host["PortBindings"] == {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}


def test_plan_refuses_an_unset_image_variable(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "docker-compose.yml").write_text(COMPOSE.replace("    env_file: vllm.env\n", ""))
    home = tmp_path / "home"
    base = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "SECRET_IMAGE")}
    imported = _cli(home, {**base, "PORT": "18123"}, "profile", "import", str(folder / "docker-compose.yml"))
    assert imported.returncode == 0, imported.stderr
    planned = _cli(home, base, "plan", "vllm")
    assert planned.returncode != 0 and "Traceback" not in planned.stderr
    assert "docker.image is ${SECRET_IMAGE}, which is not set" in planned.stderr
