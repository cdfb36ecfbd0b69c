"""A Docker host reached over ssh:// for real: a throwaway sshd (tests/support/sshd.py) in front of
the local engine, the system ssh client, and the app launching, serving and stopping through it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.doctor import Level, run_checks
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.docker_errors import connect
from tests.support import sshd
from tests.support.engine_hosts import launch_through
from tests.support.parts import missing

pytestmark = pytest.mark.docker


@pytest.fixture
def ssh_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_client: Any) -> Iterator[str]:
    reason = sshd.available()
    if reason is not None:
        missing(reason, "apt-get install -y openssh-server")
    with sshd.ssh_server(tmp_path / "sshd") as (url, bin_dir):
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        yield url


def test_connect_over_ssh_reaches_the_engine(ssh_host: str, docker_client: Any) -> None:
    client = connect(ssh_host)
    try:
        assert client.info()["ID"] == docker_client.info()["ID"]  # the same engine, over ssh
    finally:
        client.close()
    report = run_checks(ssh_host, gpu_probe=lambda: [])
    assert report.get("docker").level is Level.OK and ssh_host in report.get("docker").finding


def test_launch_serve_and_stop_over_ssh(
    ssh_host: str, docker_client: Any, tiny_profile: Callable[..., Profile]
) -> None:
    launch_through(ssh_host, tiny_profile(), docker_client)


def test_a_docker_context_and_docker_host_over_ssh(
    ssh_host: str, docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A context made by the real docker CLI (`docker context create`), named as a profile's host
    would be, and DOCKER_HOST set to the ssh URL: both go through the system ssh too."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))
    created = subprocess.run(
        ["docker", "context", "create", "via-ssh", "--docker", f"host={ssh_host}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    engine = docker_client.info()["ID"]
    client = connect("via-ssh")
    try:
        assert client.info()["ID"] == engine
    finally:
        client.close()
    monkeypatch.setenv("DOCKER_HOST", ssh_host)
    client = connect(None)
    try:
        assert client.info()["ID"] == engine
    finally:
        client.close()


def test_a_connection_whose_ssh_has_exited_closes_without_a_traceback(ssh_host: str) -> None:
    """The engine host goes away under an open connection (its ssh process exits): closing it, as the
    app and urllib3's finalizers at exit do, raises nothing and prints nothing (it was a BrokenPipeError
    traceback after pytest's summary)."""
    child = f"""
import sys
from docker.transport.sshconn import SSHSocket
import llm_dyno.core.runtime.docker_errors  # the app's engine connections
sock = SSHSocket({ssh_host.removeprefix("ssh://")!r})
sock.connect()
sock.sendall(b"GET /_ping HTTP/1.1\\r\\nHost: docker\\r\\n\\r\\n")
assert b"200 OK" in sock.makefile("rb").readline()  # the engine answered over ssh
sock.proc.kill()
sock.proc.wait(10)
sock.close()
print("closed")
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "closed", done.stderr
    assert "BrokenPipeError" not in done.stderr and "Traceback" not in done.stderr, done.stderr
