"""The Benchmark view's Spec A/B tab: enabled only for a spec profile that is not running; the verdict
table from a finished A/B; a failing launch reported in the tab (a stand-in ``vllm`` that exits)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.stats import compare_samples
from llm_dyno.core.bench.suite import suite_from_yaml
from llm_dyno.core.bench.sweep import ABResult
from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.ui.bench.ab_panel import ABPanel
from llm_dyno.ui.bench.bench_view import BenchmarkView

SPEC = '{"method": "ngram", "num_speculative_tokens": 3}'
SUITE = suite_from_yaml(
    "name: t\nwarmups: 0\nruns: 2\nprompts:\n"
    "  - {name: narrative, max_tokens: 8, messages: [{role: user, content: hi}]}\n"
)


def profile(*args: str, exe: str = "vllm") -> Profile:
    return Profile(
        name="ab-ui",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=exe),
        model="org/m",
        args=args,
    )


def result(tps: list[float]) -> BenchResult:
    runs = [BenchRun("narrative", i, False, 0.1, 1.0, 10, t, t, "length") for i, t in enumerate(tps)]
    return BenchResult("t", RunContext(), [PromptResult("narrative", runs)])


def test_button_state_and_verdict_table(qtbot, ui_home: Path) -> None:  # type: ignore[no-untyped-def]
    view = BenchmarkView(history_path=ui_home / "h.sqlite")
    qtbot.addWidget(view)
    assert view.tabs.tabText(view.tabs.indexOf(view.ab)) == "Spec A/B"
    view.set_target(profile("--port", "8123"), None)
    assert not view.ab.run_button.isEnabled() and "no --speculative-config" in view.ab.status.text()
    view.set_target(profile("--speculative-config", SPEC), "http://127.0.0.1:8000")
    assert not view.ab.run_button.isEnabled() and "stop it first" in view.ab.status.text()
    assert view.ab.stop_button.isVisibleTo(view.ab) and view.ab.stop_button.text() == "Stop “ab-ui”"
    view.set_target(profile("--speculative-config", SPEC), None)
    assert view.ab.run_button.isEnabled()

    base, cand = result([40.0, 41.0, 40.5]), result([60.0, 61.0, 60.5])
    comparison = compare_samples(
        "wall_tps", base.prompts[0].values("wall_tps"), cand.prompts[0].values("wall_tps")
    )
    view.ab.show_ab(ABResult(base, cand, (("narrative", comparison),)))
    assert [view.ab.table.item(r, 4).text() for r in range(view.ab.table.rowCount())] == ["net gain"]
    assert view.ab.table.item(0, 1).text() == "40.5" and view.ab.table.item(0, 2).text() == "60.5"


def test_failed_launch_is_reported(qtbot, ui_home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    exe = tmp_path / "vllm"
    exe.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "print('vllm serve: error: unrecognized arguments: --bad', flush=True)\n"
        "sys.exit(2)\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    panel = ABPanel()
    qtbot.addWidget(panel)
    p = profile("--bad", "--port", "8124", "--speculative-config", SPEC, exe=str(exe))
    panel.set_profile(p)
    assert panel.start(p, SUITE)
    qtbot.waitUntil(lambda: not panel.busy, timeout=30_000)
    panel.worker.wait(10)
    assert "unrecognized_arguments" in panel.status.text() and "--bad" in panel.status.text()
    assert panel.run_button.isEnabled()
