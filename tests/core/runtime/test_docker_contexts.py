"""Docker contexts made by the real docker CLI in a fresh DOCKER_CONFIG (no config.json, where
docker-py's own lookup finds nothing): found, with their TLS material. No engine is needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from docker.context import ContextAPI

from llm_dyno.core.runtime.docker_contexts import find_context
from llm_dyno.core.runtime.docker_spec import remote_engine_host
from tests.support.parts import missing


@pytest.fixture(autouse=True)
def _docker_cli_and_openssl() -> None:
    for tool, package in (("docker", "docker.io"), ("openssl", "openssl")):
        if shutil.which(tool) is None:
            missing(f"these tests need the {tool} command", f"apt-get install -y {package}")


def docker_cli(config: Path, *args: str) -> None:
    done = subprocess.run(
        ["docker", "--config", str(config), *args], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr


def test_contexts_the_cli_made_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "docker-config"
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    pem = tmp_path / "pem"
    pem.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(pem / "key.pem"), "-out", str(pem / "cert.pem"), "-subj", "/CN=gpu-box",
         "-days", "1"],
        check=True, capture_output=True,
    )  # fmt: skip
    docker_cli(config, "context", "create", "box-ssh", "--docker", "host=ssh://me@gpu-box")
    docker_cli(
        config, "context", "create", "box-tls", "--docker",
        f"host=tcp://gpu-box:2376,ca={pem / 'cert.pem'},cert={pem / 'cert.pem'},key={pem / 'key.pem'}",
    )  # fmt: skip
    assert not (config / "config.json").exists()
    assert ContextAPI.get_context("box-ssh") is None  # docker-py alone does not see them
    ssh = find_context("box-ssh")
    assert ssh is not None and ssh.host == "ssh://me@gpu-box" and ssh.tls is False
    tls = find_context("box-tls")
    assert tls is not None and tls.host == "tcp://gpu-box:2376"
    cert, key = tls.tls.cert
    assert Path(cert).read_text() == (pem / "cert.pem").read_text() and Path(key).name == "key.pem"
    assert tls.tls.verify and Path(tls.tls.ca_cert).is_file()
    assert find_context("no-such") is None
    assert remote_engine_host("box-tls") == "gpu-box"  # its GPUs are read through the container
