"""Issue 29, class 10: an ownership proof that another engine can replay. A container launched on
engine A (the profile's docker.host) shows up, name, labels and proof copied, on engine B (the default
DOCKER_HOST): ``status`` must not adopt it, and no request, least of all one with the user's
VLLM_API_KEY, may reach the port its labels name. B is a fake engine made here (it answers /info with
its own ID, or lies with A's); the port is a fake vLLM that records every request's headers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.runtime.docker_common import LABEL_MANAGED, LABEL_PORT, LABEL_PROFILE, LABEL_SNAPSHOT
from llm_dyno.core.runtime.ownership import LABEL_PROOF, sign_labels
from tests.support.fake_engine import FakeEngine
from tests.test_trust_adoption import Recorder

OWN_KEY = "sk-own-rotated-77c1"
ENGINE_A = "AAAA:AAAA:AAAA:AAAA:AAAA:AAAA:AAAA:AAAA:AAAA:AAAA:AAAA:AAAA"
HOST_A = "tcp://127.0.0.1:9"  # engine A: the profile's host (nothing answers there during the test)
KEY = bytes(range(32))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.close()


def _home(tmp_path: Path, host: str | None, *, stored: bool = True) -> Path:
    home = tmp_path / "home"
    key_file = home / "data" / "installation.key"
    key_file.parent.mkdir(parents=True, mode=0o700)
    key_file.write_text(KEY.hex() + "\n")
    key_file.chmod(0o600)
    profiles = home / "config" / "profiles"
    profiles.mkdir(parents=True)
    if stored:  # else only the container's snapshot names engine A: A is not asked at all
        (profiles / "own.yaml").write_text(_profile(0, host).to_yaml())
    return home


def _profile(port: int, host: str | None) -> Profile:
    return Profile(
        name="own",
        model="tiny",
        args=("--port", "8000", "--api-key", "${VLLM_API_KEY}"),
        docker=DockerSettings(image="tiny", container_name="own", ports=(f"{port}:8000",), host=host),
    )


def _labels(port: int, host: str | None, engine: str) -> dict[str, str]:
    """The labels and proof a container of profile ``own`` carries when launched on ``engine``."""
    snapshot = _profile(port, host).to_dict()
    labels = {
        LABEL_MANAGED: "1",
        LABEL_PROFILE: "own",
        LABEL_PORT: str(port),
        LABEL_SNAPSHOT: json.dumps(snapshot, separators=(",", ":"), sort_keys=True),
    }
    return {**labels, LABEL_PROOF: sign_labels(labels, "own", KEY, engine)}


def _status(home: Path, engine: FakeEngine) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1", "DOCKER_HOST": engine.url}
    env.update({"VLLM_API_KEY": OWN_KEY})
    env.pop("DOCKER_CONTEXT", None)
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.parametrize("b_claims", ["its own ID", "engine A's ID"])
def test_a_proof_copied_to_another_engine_is_not_adopted(
    b_claims: str, recorder: Recorder, tmp_path: Path
) -> None:
    home = _home(tmp_path, HOST_A, stored=b_claims == "its own ID")
    copied = {"own": _labels(recorder.port, HOST_A, ENGINE_A)}  # A's container, copied whole onto B
    engine_id = "BBBB:BBBB" if b_claims == "its own ID" else ENGINE_A
    with FakeEngine("list", engine_id=engine_id, containers=copied) as engine_b:
        done = _status(home, engine_b)
    assert "Traceback" not in done.stderr, done.stderr
    assert any("/containers/json" in p for p in engine_b.requests), engine_b.requests
    assert recorder.carrying(OWN_KEY) == []
    assert recorder.requests == []  # nothing at all goes to the port the copied labels name
    rows = json.loads(done.stdout)
    assert not [r for r in rows if r["profile"] == "own" and r["runtime"] == "docker"], rows
    assert "container own: cannot be followed" in done.stderr, done.stderr
    if b_claims == "its own ID":
        assert "no valid proof for this engine" in done.stderr, done.stderr
    else:
        assert f"launched on engine {HOST_A}" in done.stderr, done.stderr
        assert "listed by engine default" in done.stderr, done.stderr


def test_the_container_on_the_engine_it_was_made_on_is_still_adopted(
    recorder: Recorder, tmp_path: Path
) -> None:
    """The control: the same container, proof bound to B's ID and its profile naming the default
    engine (B), is adopted; so the refusals above are the engine binding, not a broken fake."""
    home = _home(tmp_path, None)
    mine = {"own": _labels(recorder.port, None, "BBBB:BBBB")}
    with FakeEngine("list", engine_id="BBBB:BBBB", containers=mine) as engine_b:
        done = _status(home, engine_b)
    assert "Traceback" not in done.stderr, done.stderr
    assert "cannot be followed" not in done.stderr, done.stderr
    rows = json.loads(done.stdout)
    assert [r["profile"] for r in rows if r["runtime"] == "docker"] == ["own"], rows
