"""Adoption trusts no label: a container that only says it is an LLM Dyno server (labels anyone can
write; Docker copies an image's labels to its containers) is not adopted, and ``llm-dyno status``
sends nothing to the port its labels name, least of all the key of the variable they name.
Through the real CLI in a subprocess, against a real Docker engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.runtime.docker_common import LABEL_MANAGED, LABEL_PORT, LABEL_PROFILE, LABEL_SNAPSHOT
from llm_dyno.core.runtime.ownership import LABEL_PROOF
from tests.conftest_docker import free_port
from tests.support.images import TEST_LABEL, TINY_IMAGE, host_mounts

pytestmark = pytest.mark.docker
STOLEN = "sk-stolen-4e1f0c9d"  # the value of the variable the forged labels name


class Recorder:
    """An HTTP listener on 127.0.0.1 that answers like a healthy vLLM and records every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.requests.append((self.path, dict(self.headers.items())))
                body = json.dumps({"object": "list", "data": [{"id": "tiny"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def carrying(self, secret: str) -> list[str]:
        return [path for path, headers in self.requests if any(secret in v for v in headers.values())]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.close()


def cli(home: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1", "STOLEN_KEY": STOLEN}
    env.update({"VLLM_API_KEY": "sk-own-0d3c"})
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _forged_labels(port: int, profile_name: str) -> dict[str, str]:
    """What the issue's attacker writes: an llm-dyno snapshot whose key is $STOLEN_KEY, on ``port``."""
    snapshot = Profile(
        name=profile_name,
        model="tiny",
        args=("--api-key", "${STOLEN_KEY}"),
        docker=DockerSettings(image=TINY_IMAGE, ports=(f"{port}:8000",)),
    ).to_dict()
    return {
        LABEL_MANAGED: "1",
        LABEL_PROFILE: profile_name,
        LABEL_PORT: str(port),
        LABEL_SNAPSHOT: json.dumps(snapshot, separators=(",", ":"), sort_keys=True),
        TEST_LABEL: "1",
    }


def test_status_adopts_no_container_whose_labels_only_claim_to_be_ours(
    docker_client: Any,
    test_images: None,
    unique_name: Callable[[str], str],
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    # the user's own server, launched through the CLI: it must still be adopted
    own = unique_name("own")
    profiles = home / "config" / "profiles"
    profiles.mkdir(parents=True)
    mine = Profile(
        name=own,
        model="tiny",
        args=("--port", "8000", "--api-key", "${VLLM_API_KEY}"),
        docker=DockerSettings(
            image=TINY_IMAGE,
            container_name=own,
            ports=(f"{free_port()}:8000",),
            volumes=host_mounts(with_vllm=False),
            labels={TEST_LABEL: "1"},
        ),
    )
    (profiles / f"{own}.yaml").write_text(mine.to_yaml())
    made: list[Any] = []
    try:
        done = cli(home, "launch", own, "--wait", "--timeout", "60")
        assert done.returncode == 0, done.stdout + done.stderr
        genuine = docker_client.containers.get(own).labels
        assert len(genuine[LABEL_PROOF]) == 64
        key_file = home / "data" / "installation.key"
        assert key_file.stat().st_mode & 0o777 == 0o600
        key_text = key_file.read_text().strip()
        assert not any(key_text in value for value in genuine.values())  # never in a label

        forged = {"forged": _forged_labels(recorder.port, "evil")}
        # a copy of the genuine proof on other labels (the snapshot and port swapped for the attacker's)
        forged["copied-proof"] = {**_forged_labels(recorder.port, own), LABEL_PROOF: genuine[LABEL_PROOF]}
        # the genuine labels, proof and all, on a container of another name (a replay)
        forged["replayed"] = {**genuine}
        for stem, labels in forged.items():
            made.append(
                docker_client.containers.run(
                    TINY_IMAGE,
                    name=unique_name(stem),
                    detach=True,
                    init=True,
                    labels=labels,
                    volumes=list(host_mounts(with_vllm=False)),
                )
            )
        for args in (["status"], ["status", "--json"], ["status", "--live"]):
            done = cli(home, *args)
            assert done.returncode == 0, done.stderr
            assert recorder.carrying(STOLEN) == [], args
            assert recorder.requests == [], args  # nothing at all goes to the port the labels name
            for container in made:
                assert f"container {container.name}: cannot be followed" in done.stderr, args
                assert "this installation did not launch it" in done.stderr
            if args == ["status", "--json"]:
                rows = json.loads(done.stdout)
                assert [r["profile"] for r in rows if r["runtime"] == "docker"].count(own) == 1
                assert not [r for r in rows if r["profile"] == "evil"]
                assert all(str(recorder.port) not in r["url"] for r in rows)
            else:
                assert own in done.stdout and "evil" not in done.stdout
        done = cli(home, "stop", own)
        assert done.returncode == 0, done.stderr
        assert all(c.name != own for c in docker_client.containers.list(all=True, filters={"name": own}))
    finally:
        for container in made:
            container.remove(force=True)
        cli(home, "stop", own)


def test_a_key_file_others_can_read_is_refused_with_a_clear_message(
    docker_client: Any, test_images: None, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    key_file = home / "data" / "installation.key"
    key_file.parent.mkdir(parents=True)
    key_file.write_text("ab" * 32 + "\n")
    key_file.chmod(0o644)
    done = cli(home, "status")
    assert done.returncode == 0, done.stderr
    assert f"{key_file}: the installation key is refused: others may read it (mode 644" in done.stderr
    assert "Traceback" not in done.stderr
