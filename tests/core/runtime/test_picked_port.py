"""A server port published without a host port (``ports: ["8000"]``, ``docker run -p 8000``): accepted as
Compose and Docker accept it; ``plan`` says the host port is Docker's choice, ``launch`` reads back the
port Docker picked and calls it (readiness), and ``status`` (a new process adopting the container) shows
it. Real Docker engine, the CLI in a subprocess (issue 23)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cli import cli as _cli
from tests.support.images import TINY_IMAGE

pytestmark = pytest.mark.docker

COMPOSE = f"""\
services:
  vllm:
    image: {TINY_IMAGE}
    entrypoint: ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]
    command: ["tiny", "--port", "8000"]
    ports:
      - 8000
    volumes:
      - /usr:/usr:ro
"""
DOCKER_RUN = f"docker run -p 8000 -v /usr:/usr:ro {TINY_IMAGE} tiny --port 8000"  # its entrypoint: the fake


RANGE = COMPOSE.replace("      - 8000\n", "      - 127.0.0.1:18100-18140:8000\n")  # Docker picks in it


@pytest.mark.parametrize("form", ["compose", "docker-run", "host-range"])
def test_docker_picks_the_host_port_and_launch_calls_it(
    tmp_path: Path, docker_client: Any, test_images: None, form: str
) -> None:
    home = tmp_path / "home"
    name = f"wt23port{uuid.uuid4().hex[:6]}"
    source = tmp_path / ("run.sh" if form == "docker-run" else "compose.yaml")
    source.write_text({"compose": COMPOSE, "docker-run": DOCKER_RUN + "\n", "host-range": RANGE}[form])
    imported = _cli(home, "profile", "import", str(source), "--name", name)
    assert imported.returncode == 0, imported.stderr

    planned = _cli(home, "plan", name)
    assert planned.returncode == 0, planned.stderr
    assert "host port: chosen by Docker at launch" in planned.stdout
    assert f"# profile '{name}' (docker) → http://127.0.0.1:<chosen by Docker>" in planned.stdout
    as_json = json.loads(_cli(home, "plan", name, "--json").stdout)
    assert as_json["host_port"] is None
    ports = {"8000/tcp": ["127.0.0.1", "18100-18140"] if form == "host-range" else ["127.0.0.1"]}
    assert as_json["container"]["ports"] == ports  # no fixed host port: Docker's choice

    try:
        launched = _cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})
        (binding,) = found.attrs["NetworkSettings"]["Ports"]["8000/tcp"]
        picked = int(binding["HostPort"])
        assert binding["HostIp"] == "127.0.0.1" and picked > 0
        assert form != "host-range" or 18100 <= picked <= 18140
        # the launch line names the port once Docker picked it (else says it is Docker's choice)
        assert any(
            f"(docker) at {where}" in launched.stdout
            for where in (f"http://127.0.0.1:{picked}", "a host port Docker picks")
        ), launched.stdout
        assert "http://127.0.0.1:0" not in launched.stdout + launched.stderr
        # readiness was checked on the port Docker picked, which the ready line names
        assert f"ready: http://127.0.0.1:{picked} " in launched.stdout, launched.stdout
        assert httpx.get(f"http://127.0.0.1:{picked}/health", timeout=5).status_code == 200

        # another process adopts the running container and reads the same port back from it
        status = _cli(home, "status", "--json")
        assert status.returncode == 0, status.stderr
        (row,) = [r for r in json.loads(status.stdout) if r["profile"] == name]
        assert row["url"] == f"http://127.0.0.1:{picked}"
        assert row["state"] == "ready"
    finally:
        _cli(home, "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)
