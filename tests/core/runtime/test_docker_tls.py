"""A Docker engine over tcp:// with TLS and client certificates, for real: a TLS proxy with a
throwaway CA in front of the local engine (tests/support/tls_engine.py), reached through
DOCKER_TLS_VERIFY / DOCKER_CERT_PATH and through a docker context that holds the certificates.

Run with REQUESTS_CA_BUNDLE pointing at the system CAs, as on many managed machines: requests lets
that variable replace the engine's own CA, which made every TLS engine unreachable before."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import FailureKind
from llm_dyno.core.runtime.docker_errors import DockerError, connect
from tests.support.engine_hosts import launch_through
from tests.support.parts import missing
from tests.support.tls_engine import tls_engine

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _openssl() -> None:
    if shutil.which("openssl") is None:
        missing("these tests need the openssl command", "apt-get install -y openssl")


SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_client: Any) -> Iterator[tuple[str, Path]]:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", SYSTEM_CAS)
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.delenv("DOCKER_CERT_PATH", raising=False)
    with tls_engine(tmp_path / "tls") as found:
        yield found


def test_tls_engine_through_the_environment(
    engine: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, docker_client: Any,
    tiny_profile: Callable[..., Profile],
) -> None:  # fmt: skip
    url, certs = engine
    with pytest.raises(DockerError) as plain:  # no certificates: refused, and the hint says what to set
        connect(url)
    assert plain.value.kind is FailureKind.DOCKER_UNREACHABLE
    assert "DOCKER_CERT_PATH" in (plain.value.hint or "")
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", str(certs))
    client = connect(url)
    try:
        assert client.info()["ID"] == docker_client.info()["ID"]
    finally:
        client.close()
    assert os.environ["REQUESTS_CA_BUNDLE"] == SYSTEM_CAS  # left as it was
    launch_through(url, tiny_profile(), docker_client)


def test_tls_engine_through_a_docker_context(
    engine: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_client: Any
) -> None:
    url, certs = engine
    config = tmp_path / "docker-config"
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    done = subprocess.run(
        ["docker", "context", "create", "tls-box", "--docker",
         f"host={url},ca={certs / 'ca.pem'},cert={certs / 'cert.pem'},key={certs / 'key.pem'}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    client = connect("tls-box")
    try:
        assert client.info()["ID"] == docker_client.info()["ID"]
    finally:
        client.close()
