"""One resolved launch plan (issue 30): a walk from the Benchmark job to its HTTP requests, and from
``launch`` to the server process, reads the profile's flags once (``flags.parse_args``, counted by a
wrapper this test installs: instrumentation only), and the API key sits in no field of the plan, the
endpoint or the benchmark spec: it is read when a request is sent, and the server sees it then."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from llm_dyno.core import secrets
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.jobs.bench_job import prepare_bench, run_bench
from llm_dyno.core.profiles import flags
from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime, profile_from_yaml
from llm_dyno.core.runtime.manager import ServerManager
from tests.conftest_docker import free_port
from tests.support.keyed_server import KeyedServer

SECRET = "sk-plan-once-walk-secret-4b1e9"
KEY_ARGS = ("--api-key", "${PLAN_WALK_KEY}")
SUITE = (
    "name: walk\nwarmups: 0\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: short, max_tokens: 24, messages: [{role: user, content: Say something.}]}\n"
)


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, ...]]]:
    """Every ``flags.parse_args`` call from now on (each module's own name for it wrapped)."""
    calls: list[tuple[str, ...]] = []
    real = flags.parse_args

    def counting(args: object) -> flags.ParsedArgs:
        calls.append(tuple(args))  # type: ignore[call-overload]
        return real(args)  # type: ignore[arg-type]

    for module in list(sys.modules.values()):
        if (
            getattr(module, "__name__", "").startswith("llm_dyno")
            and getattr(module, "parse_args", None) is real
        ):
            monkeypatch.setattr(module, "parse_args", counting)
    yield calls


@pytest.fixture
def split_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per ``secrets.split_secret_flags`` call from now on (every module's name for it)."""
    calls: list[int] = []
    real = secrets.split_secret_flags

    def counting(args: Any) -> Any:
        calls.append(len(args))
        return real(args)

    for module in list(sys.modules.values()):
        ours = getattr(module, "__name__", "").startswith("llm_dyno")
        if ours and getattr(module, "split_secret_flags", None) is real:
            monkeypatch.setattr(module, "split_secret_flags", counting)
    return calls


def _keyed_profile(tmp_path: Path, port: int) -> str:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    return Profile(
        name="walk",
        runtime=Runtime.PROCESS,
        model=str(model),
        args=("--served-model-name", "tiny", "--port", str(port), "--max-model-len", "512", *KEY_ARGS),
    ).to_yaml()


def _holds_secret(value: object) -> bool:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return SECRET in repr(value) or any(
            _holds_secret(getattr(value, f.name)) for f in dataclasses.fields(value)
        )
    return SECRET in repr(value)


def test_the_benchmark_walk_reads_the_flags_once_and_the_key_only_when_it_sends(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parse_calls: list[tuple[str, ...]],
    split_calls: list[int],
) -> None:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PLAN_WALK_KEY", SECRET)
    suite = suite_from_yaml(SUITE)
    with KeyedServer(SECRET) as server:
        text = _keyed_profile(tmp_path, int(server.url.rsplit(":", 1)[1]))
        parse_calls.clear()  # from reading the profile to the last request
        split_calls.clear()
        profile = profile_from_yaml(text, source="walk.yaml")
        registry = ServerManager()
        spec = prepare_bench(profile, suite, registry=registry, store=False, thermal_wait=None)
        events: list[object] = []
        outcome = run_bench(spec, events.append)
        counted, splits = list(parse_calls), list(split_calls)
        plan = registry.plan(profile)
    assert len(counted) == 1, counted
    assert len(splits) == 1, splits  # the plan's; the endpoint's key is what it kept
    assert outcome.result.error is None, outcome.result.error
    assert server.posts == 2  # both runs reached the server...
    assert server.authorizations and set(server.authorizations) == {f"Bearer {SECRET}"}  # ...with the key
    assert spec.endpoint == plan.endpoint and plan.endpoint.url == server.url
    assert plan.key is not None and plan.key.ref == "${PLAN_WALK_KEY}"
    for where in (plan, plan.endpoint, spec, outcome.result):
        assert not _holds_secret(where), where


def test_the_key_of_a_plan_is_read_when_sent_not_when_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PLAN_WALK_KEY", "first")
    plan = ServerManager().plan(profile_from_yaml(_keyed_profile(tmp_path, 18999)))
    monkeypatch.setenv("PLAN_WALK_KEY", "second")  # a key changed after planning is the one sent
    assert plan.endpoint.api_key() == "second"
    monkeypatch.delenv("PLAN_WALK_KEY")
    assert plan.key is not None and "${PLAN_WALK_KEY} is not set here" in (plan.key.problem() or "")


# ``llm-dyno ARGS`` as the console script runs it, with flags.parse_args counted from the first import
COUNTED_CLI = """
import atexit, sys
from llm_dyno.core.profiles import flags
calls = []
real = flags.parse_args
def counting(args):
    calls.append(list(args))
    return real(args)
flags.parse_args = counting  # before any module that reads flags is imported
atexit.register(lambda: print(f"PARSE_ARGS_CALLS={len(calls)}", file=sys.stderr))
from llm_dyno.cli import run
sys.exit(run(sys.argv[1:]))
"""

# a stand-in `vllm serve`: /health and /v1/models on its --host/--port, only with the key vLLM reads
STAND_IN = """
import http.server, os, sys
args = sys.argv[1:]
port, host = int(args[args.index("--port") + 1]), args[args.index("--host") + 1]
key = os.environ.get("VLLM_API_KEY")
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        ok = self.headers.get("Authorization") == f"Bearer {key}"
        body = b'{"object": "list", "data": [{"id": "tiny"}]}' if ok else b'{"error": "Unauthorized"}'
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
print("serving", flush=True)
http.server.HTTPServer((host, port), H).serve_forever()
"""


def _counted_cli(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", COUNTED_CLI, *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _parse_count(stderr: str) -> int:
    m = re.search(r"PARSE_ARGS_CALLS=(\d+)", stderr)
    assert m is not None, stderr
    return int(m.group(1))


def test_launch_of_a_process_server_reads_the_flags_once_and_readiness_sends_the_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    exe = tmp_path / "vllm"
    exe.write_text(f"#!{sys.executable}\n{STAND_IN}")
    exe.chmod(0o755)
    port = free_port()
    profile = profile_from_yaml(_keyed_profile(tmp_path, port)).with_changes(
        process=ProcessSettings(executable=str(exe))
    )
    store = home / "config" / "profiles"
    store.mkdir(parents=True)
    (store / "walk.yaml").write_text(profile.to_yaml())
    os.utime(store / "walk.yaml", (time.time() - 3600,) * 2)  # saved an hour ago, as a user's profile is
    env = {"PLAN_WALK_KEY": SECRET}
    # the store's first read (its index, where there is one) is the folder's, not the launch's
    assert _counted_cli(home, "plan", "walk", env=env).returncode == 0
    try:
        done = _counted_cli(home, "launch", "walk", "--wait", "--timeout", "60", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _parse_count(done.stderr) == 1, done.stderr
        # ready means /v1/models answered 200: the probe sent the key the stand-in reads from VLLM_API_KEY
        answer = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5)
        assert answer.status_code == 401
        record = next((home / "state").rglob("*.json")) if (home / "state").exists() else None
        files = [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
        assert files == [], files
        assert record is None or SECRET not in record.read_text()
    finally:
        stopped = _counted_cli(home, "stop", "walk", env=env)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.mark.docker
def test_launch_of_a_container_reads_the_flags_once_and_connects_to_the_engine_once(
    docker_client: Any,
    tiny_profile: Callable[..., Profile],
    monkeypatch: pytest.MonkeyPatch,
    parse_calls: list[tuple[str, ...]],
    split_calls: list[int],
) -> None:
    from llm_dyno.core.runtime import docker_errors
    from llm_dyno.core.runtime.docker_backend import DockerRuntime

    connects: list[str | None] = []
    real_connect = docker_errors.connect

    def counting_connect(host: str | None = None, *args: Any, **kwargs: Any) -> Any:
        connects.append(host)
        return real_connect(host, *args, **kwargs)

    monkeypatch.setattr(docker_errors, "connect", counting_connect)
    monkeypatch.setenv("PLAN_WALK_KEY", SECRET)
    text = tiny_profile("walk", args=KEY_ARGS).to_yaml()
    parse_calls.clear()  # from reading the profile to the container's creation
    profile = profile_from_yaml(text)
    split_calls.clear()  # from the plan on
    manager = ServerManager({"docker": DockerRuntime()})
    handle = manager.launch(profile)  # returns once the container exists
    try:
        counted, splits = list(parse_calls), list(split_calls)
        assert len(splits) == 1, splits  # the plan's; exposure and the launch read what it kept
        assert handle.status.state.is_live, handle.status
        assert handle.container_id is not None  # created
        assert len(counted) == 1, counted  # when the profile was read; the launch reads what it gave
        assert connects == [None], connects  # the launch's look for running servers, then its create
        assert handle.wait_ready(30).state.value == "ready"
        assert not _holds_secret(handle.plan) and not _holds_secret(handle.plan.endpoint)
        assert SECRET not in " ".join(docker_client.containers.get(handle.container_id).attrs["Args"])
    finally:
        handle.stop(timeout=10)
