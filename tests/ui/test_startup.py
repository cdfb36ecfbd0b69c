"""Start fast: views built on first show, and a cold start that loads no Docker, ssh, HTTP or benchmark
code (what it costs is measured by benchmarks/startup.py, not here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DEFERRED = ("diff", "benchmark", "diagnostics", "servers", "tune")


def test_views_are_built_when_their_tab_is_first_shown(window) -> None:  # type: ignore[no-untyped-def]
    for key in DEFERRED:
        assert not window.views.is_built(key), key
    window.select_profile("cpu-demo")
    window.show_view("benchmark")
    assert window.views.is_built("benchmark") and not window.views.is_built("diagnostics")
    bench = window.bench_view
    assert bench.isVisible() and window.stack.currentWidget().isAncestorOf(bench)
    # the selected profile reached the view as it was built, and follows the selection from then on
    assert bench.profile is not None and bench.profile.name == "cpu-demo"
    window.select_profile("qwen36-27b-mtp")
    assert bench.profile is not None and bench.profile.name == "qwen36-27b-mtp"
    # asking for a view builds it too, hidden until its tab is shown
    diff = window.diff_view
    assert window.views.is_built("diff") and window.views["diff"] is diff and not diff.isVisible()
    window.show_view("diff")
    assert diff.isVisible()


@pytest.mark.parametrize("view", [None, "servers"])
def test_a_cold_start_loads_no_docker_ssh_http_or_benchmark_code(tmp_path: Path, view: str | None) -> None:
    shot = tmp_path / "window.png"
    argv = ["--screenshot", str(shot), *(["--view", view] if view else [])]
    code = (
        "import json, sys\n"
        "from llm_dyno.cli import run\n"
        f"code = run({argv!r})\n"
        "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LLM_DYNO_HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["code"] == 0 and shot.stat().st_size > 10_000
    loaded = set(out["modules"])
    # the servers overview reads the registry when shown (in the bridge's worker): every Docker engine
    # the profiles name, so the Docker SDK loads there, then
    registry = () if view == "servers" else ("docker", "paramiko")
    for module in (
        *registry,
        "httpx",
        "pynvml",
        "prometheus_client",
        "llm_dyno.commands.bench_cmds",
        "llm_dyno.ui.bench.bench_view",
        "llm_dyno.ui.diagnostics.diagnostics_view",
        "llm_dyno.ui.tune.tune_view",
        "llm_dyno.core.diagnose.engine",
    ):
        assert module not in loaded, f"{module} was imported at start-up"
    assert ("llm_dyno.ui.views.servers_overview" in loaded) is (view == "servers")
