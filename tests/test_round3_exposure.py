"""Issue 29, class 7: exposure told truthfully, through the CLI. ``network_mode: host`` drops the
ports and leaves vLLM on the host's interfaces (0.0.0.0 without --host); a mount of the engine's
socket or of the host's system trees hands the container the host. Each is named at import (a
warning at its line) and by ``plan`` (text and --json); ports on ``::`` or ``bind: file`` are
reachable from the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import DockerSettings, Profile
from tests.support.cli import cli

COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.6.0
    network_mode: host
    ports:
      - "8020:8000"
    volumes:
      - /var/run/docker.sock:/var/run/docker.sock
      - /:/host:ro
      - ./models:/models
    command: ["--model", "m"]
"""
HANDS = "hands the container the host"


def _import(home: Path, path: Path) -> str:
    done = cli(home, "profile", "import", str(path))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def _plan(home: Path, name: str) -> tuple[str, list[str]]:
    text = cli(home, "plan", name)
    assert text.returncode == 0, text.stderr
    as_json = cli(home, "plan", name, "--json")
    assert as_json.returncode == 0, as_json.stderr
    warnings = [w["text"] for w in json.loads(as_json.stdout)["warnings"] if w["kind"] == "exposure"]
    return text.stdout, warnings


def test_host_network_and_host_mounts_are_named_at_import_and_plan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    compose = tmp_path / "compose.yaml"
    compose.write_text(COMPOSE)
    said = _import(home, compose)
    assert f"{compose}:4, field 'services.vllm.network_mode': network_mode host" in said, said
    assert "its ports ('8020:8000') are ignored" in said
    assert f"{compose}:8, field 'services.vllm.volumes[0]': volume '/var/run/docker.sock:" in said, said
    assert f"{compose}:9, field 'services.vllm.volumes[1]': volume '/:/host:ro' {HANDS}" in said, said
    assert "Windows path" not in said  # "/" is no drive letter
    assert "have no address" not in said  # nothing is published under host networking
    assert "models" not in said  # an ordinary folder says nothing
    assert "the server is reachable from the network (0.0.0.0:8000) without an API key" in said

    text, warnings = _plan(home, "vllm")
    assert "loopback only" not in text, text
    assert "published on 127.0.0.1 only" not in text, text
    assert "# listens on 0.0.0.0:8000 (the host's network, no port published: every interface" in text
    assert "without an API key" in text
    for plan_said in (text, "\n".join(warnings)):
        assert "network_mode host: the container uses the host's network" in plan_said
        assert f"volume '/var/run/docker.sock:/var/run/docker.sock' {HANDS}" in plan_said
        assert f"volume '/:/host:ro' {HANDS}" in plan_said
        assert "/models' " + HANDS not in plan_said


@pytest.mark.parametrize(
    ("source", "hands"),
    [
        ("/etc", True),
        ("/root", True),
        ("/proc", True),
        ("/sys", True),
        ("/dev", True),
        ("/run", True),  # holds the engine's socket
        ("/var", True),  # holds /var/lib/docker
        ("//", True),
        ("/run/containerd/containerd.sock", True),
        ("/run/user/1000/podman/podman.sock", True),
        ("/srv/models", False),
        ("/etc-models", False),
    ],
)
def test_a_pasted_docker_run_mount_of_the_host_is_named(source: str, hands: bool, tmp_path: Path) -> None:
    home = tmp_path / "home"
    line = tmp_path / "run.sh"
    line.write_text(
        f"docker run --gpus all -v {source}:/mnt -p 8000:8000 vllm/vllm-openai:v0.6.0 --model m\n"
    )
    said = _import(home, line)
    assert (f"{line}:1, field '--volume': volume '{source}:/mnt' {HANDS}" in said) is hands, said
    text, warnings = _plan(home, "m")
    assert (HANDS in text) is hands, text
    assert any(HANDS in w for w in warnings) is hands, warnings


@pytest.mark.parametrize(
    ("docker", "listens"),
    [
        (DockerSettings(image="i", ports=("[::]:8020:8000",)), "0.0.0.0:8020 (every interface"),
        (DockerSettings(image="i", ports=("8020:8000",), bind="file"), "0.0.0.0:8020 (every interface"),
        (DockerSettings(image="i", network="host"), "0.0.0.0:8000 (the host's network"),
    ],
)
def test_every_way_beyond_loopback_is_said(docker: DockerSettings, listens: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True)
    (folder / "p.yaml").write_text(Profile(name="p", model="m", docker=docker).to_yaml())
    text, warnings = _plan(home, "p")
    assert f"# listens on {listens}" in text, text
    assert any("reachable from the network" in w and "without an API key" in w for w in warnings), warnings


def test_host_network_with_a_loopback_host_is_loopback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True)
    profile = Profile(
        name="p", model="m", args=("--host", "127.0.0.1"), docker=DockerSettings(image="i", network="host")
    )
    (folder / "p.yaml").write_text(profile.to_yaml())
    text, warnings = _plan(home, "p")
    assert "# listens on 127.0.0.1:8000 (the host's network, no port published: loopback only" in text, text
    assert not any("without an API key" in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("publish", "bind"),
    [("0.0.0.0:8000:8000", "loopback"), ("[::]:8000:8000", "loopback"), ("8000:8000", "file")],
)
def test_a_port_open_to_the_network_is_named_at_import(publish: str, bind: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    line = tmp_path / "run.sh"
    line.write_text(f"docker run --gpus all -p {publish} vllm/vllm-openai:v0.6.0 --model m\n")
    done = cli(home, "profile", "import", "--bind", bind, str(line))
    assert done.returncode == 0, done.stderr
    said = f"{line}:1, field '--publish': the server is reachable from the network (0.0.0.0:8000) without"
    assert said in done.stderr, done.stderr
