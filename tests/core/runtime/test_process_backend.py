"""The process backend against a real vLLM (CPU build) serving a tiny random model.

Every server start costs ~25-40 s on 2 cores, so one module-scoped server carries the lifecycle,
chat and adoption checks; the failure cases fail fast (argument parsing, KV cache check, bind).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.runtime.base import FailureKind, ServerState
from llm_dyno.core.runtime.process_backend import ProcessHandle, ProcessRuntime, servers_dir
from tests.support import vllm_env

pytestmark = pytest.mark.vllm

READY_TIMEOUT_S = 180
API_KEY = "test-secret-4711"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("dyno-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("LLM_DYNO_HOME", str(folder))
    yield folder
    mp.undo()


def make_profile(
    name: str, model: Path, exe: Path, cache: Path, *extra: str, port: int | None = None
) -> Profile:
    env = vllm_env.server_env(cache)
    args = [*vllm_env.FAST_ARGS, "--served-model-name", "tiny", "--max-model-len", "1024"]
    args += ["--port", str(port or vllm_env.free_port()), *extra]
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model=str(model),
        args=tuple(args),
        env=env,
    )


def our_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("llm-dyno-")]


def no_threads_left(timeout: float = 10) -> bool:
    """A handle's last thread may still be returning right after it published FAILED."""
    deadline = time.monotonic() + timeout
    while our_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not our_threads()


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def server(home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path) -> Iterator[ProcessHandle]:
    # With an API key given as a reference: readiness must send it, and it must not leak into argv.
    mp = pytest.MonkeyPatch()
    mp.setenv("LLM_DYNO_TEST_API_KEY", API_KEY)
    profile = make_profile(
        "tiny-proc", tiny_model, vllm_exe, vllm_cache, "--api-key", "${LLM_DYNO_TEST_API_KEY}"
    )
    runtime = ProcessRuntime()
    handle = runtime.launch(runtime.plan(profile))
    assert isinstance(handle, ProcessHandle)
    yield handle
    if handle.status.state.is_live:
        handle.stop(timeout=20)
    mp.undo()


def test_plan_is_pure_and_local_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "k")  # an unset key refuses the plan (tests/test_secrets_launch.py)
    tiny_model = tmp_path / "tiny"
    tiny_model.mkdir()
    profile = Profile(
        name="p",
        runtime=Runtime.PROCESS,
        model=str(tiny_model),
        args=("--port", "8011"),
        gpus=(0, 1),
        env={"HF_TOKEN": "${HF_TOKEN}"},
    )
    plan = ProcessRuntime().plan(profile)
    assert list(plan.spec.argv) == ["vllm", "serve", str(tiny_model), "--port", "8011", "--host", "127.0.0.1"]
    assert plan.base_url == "http://127.0.0.1:8011" and plan.host_port == 8011
    assert dict(plan.spec.env) == {"HF_TOKEN": "${HF_TOKEN}", "CUDA_VISIBLE_DEVICES": "0,1"}  # not resolved
    py = profile.with_changes(
        process=ProcessSettings(executable="/opt/venv/bin/python3"),
        args=("--host", "0.0.0.0"),  # noqa: S104
    )
    plan = ProcessRuntime().plan(py)
    assert list(plan.spec.argv[:4]) == ["/opt/venv/bin/python3", "-m", "vllm.entrypoints.cli.main", "serve"]
    assert plan.base_url == "http://127.0.0.1:8000"
    keyed = profile.with_changes(args=("--api-key", "${MY_KEY}", "--port", "8011"))
    plan = ProcessRuntime().plan(keyed)
    assert "--api-key" not in plan.spec.argv and plan.spec.env["VLLM_API_KEY"] == "${MY_KEY}"


def test_a_model_path_that_does_not_exist_is_refused_at_plan_time(tmp_path: Path) -> None:
    """Else vLLM takes it for a Hugging Face repo id and fails 20 s later with a lookup error."""
    profile = Profile(name="p", runtime=Runtime.PROCESS, model=str(tmp_path / "gone"))
    with pytest.raises(DynoError, match=r"the model folder .*gone does not exist") as caught:
        ProcessRuntime().plan(profile)
    assert caught.value.hint is not None and "Hugging Face repo id" in caught.value.hint
    (tmp_path / "file").write_text("x")
    with pytest.raises(DynoError, match="is not a folder"):
        ProcessRuntime().plan(profile.with_changes(model=str(tmp_path / "file")))
    ProcessRuntime().plan(profile.with_changes(model="Qwen/Qwen3-0.6B"))  # a repo id is vLLM's to find


def test_missing_executable_fails_without_a_process(home: Path, tiny_model: Path) -> None:
    profile = Profile(
        name="nope",
        runtime=Runtime.PROCESS,
        model=str(tiny_model),
        process=ProcessSettings(executable="no-such-vllm-here"),
    )
    handle = ProcessRuntime().launch(ProcessRuntime().plan(profile))
    assert handle.status.state is ServerState.FAILED
    assert (
        handle.status.failure is not None and handle.status.failure.kind is FailureKind.EXECUTABLE_NOT_FOUND
    )


def test_launch_ready_chat_and_state_file(server: ProcessHandle) -> None:
    seen: list[ServerState] = []
    server.subscribe(lambda s: seen.append(s.state))
    status = server.wait_ready(READY_TIMEOUT_S)
    assert status.state is ServerState.READY, (status, server.logs.lines(last=30))
    assert "tiny" in status.detail
    assert server.log_path.exists() and server.log_path.parent == servers_dir().parent / "logs"
    assert server.state_path.exists()
    assert API_KEY not in server.state_path.read_text()
    assert API_KEY not in Path(f"/proc/{server.pid}/cmdline").read_text()
    assert httpx.get(f"{server.plan.base_url}/v1/models", timeout=10).status_code == 401
    reply = httpx.post(
        f"{server.plan.base_url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {API_KEY}"},
        json={
            "model": "tiny",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 8,
            "chat_template_kwargs": {"enable_thinking": False},
        },
        timeout=60,
    )
    assert reply.status_code == 200
    assert reply.json()["usage"]["completion_tokens"] >= 1
    assert any("Application startup complete" in line for line in server.logs.lines())


def test_adopt_after_restart_then_stop_through_the_adopted_handle(server: ProcessHandle) -> None:
    assert server.wait_ready(READY_TIMEOUT_S).state is ServerState.READY
    adopted = [h for h in ProcessRuntime().adopt() if h.profile_name == "tiny-proc"]
    assert len(adopted) == 1
    other = adopted[0]
    assert other.adopted and other.pid == server.pid and other.plan.base_url == server.plan.base_url
    assert other.wait_ready(10).state is ServerState.READY
    assert any("Application startup complete" in line for line in other.logs.lines())
    final = other.stop(timeout=20)
    assert final.state is ServerState.STOPPED
    assert not group_alive(server.pgid), "the whole process group is gone"
    assert not other.state_path.exists()
    # The launching handle sees its server end too, and leaves no thread behind.
    assert server.wait_done(15).state in (ServerState.FAILED, ServerState.STOPPED)
    server.stop(5)
    assert no_threads_left()


def test_stop_leaves_no_process_or_thread(
    home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> None:
    # Stopping while it still loads: the SIGTERM reaches the whole group.
    runtime = ProcessRuntime()
    handle = runtime.launch(runtime.plan(make_profile("tiny-stop", tiny_model, vllm_exe, vllm_cache)))
    assert isinstance(handle, ProcessHandle)
    time.sleep(3)
    assert handle.status.state.is_loading
    final = handle.stop(timeout=20)
    assert final.state is ServerState.STOPPED
    assert not group_alive(handle.pgid)
    assert no_threads_left(0)
    assert not handle.state_path.exists()
    assert list(runtime.adopt()) == []


def _fail(profile: Profile, timeout: float = 120) -> ProcessHandle:
    runtime = ProcessRuntime()
    handle = runtime.launch(runtime.plan(profile))
    assert isinstance(handle, ProcessHandle)
    status = handle.wait_done(timeout)
    assert status.state is ServerState.FAILED, (status, handle.logs.lines(last=20))
    assert no_threads_left()
    assert not group_alive(handle.pgid)
    return handle


def test_unrecognized_argument(home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path) -> None:
    handle = _fail(make_profile("bad-flag", tiny_model, vllm_exe, vllm_cache, "--no-such-flag"))
    failure = handle.status.failure
    assert failure is not None and failure.kind is FailureKind.UNRECOGNIZED_ARGUMENTS
    assert failure.details.arguments == ("--no-such-flag",) and handle.exit_code == 2


def test_port_taken(home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        handle = _fail(make_profile("port-taken", tiny_model, vllm_exe, vllm_cache, port=port))
    failure = handle.status.failure
    assert failure is not None and failure.kind is FailureKind.PORT_IN_USE, failure


def test_kv_cache_too_small_for_max_model_len(
    home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> None:
    # 1 GiB of KV cache holds ~1M tokens of this model; allow a length beyond its 4096 positions.
    profile = make_profile("kv-small", tiny_model, vllm_exe, vllm_cache)
    args = list(profile.args)
    args[args.index("--max-model-len") + 1] = "2000000"
    profile = profile.with_changes(
        args=tuple(args), env={**profile.env, "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    )
    handle = _fail(profile, timeout=180)
    failure = handle.status.failure
    assert failure is not None and failure.kind is FailureKind.KV_CACHE_TOO_SMALL, failure
    assert failure.details.max_model_len == 2000000
    assert 0 < (failure.details.estimated_max_model_len or 0) < 2000000
