"""The Diagnostics view on the founding case: the shipped founding profile (profiles/qwen36-27b-mtp.yaml),
the shipped reference it was compared with, the post's TPS typed, and a launch log of that setup built
from real lines (tests/fixtures/diagnose/founding_launch.log). It shows the gap split with ms per pass,
acceptance as not the cause, the boot-log facts that differ first, and the causes with verdicts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from llm_dyno.core.paths import data_dir
from llm_dyno.core.profiles.model import profile_from_yaml
from llm_dyno.core.profiles.store import ProfileStore, file_stem
from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from llm_dyno.ui.session import ProfileSession

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "qwen36-27b-mtp.yaml"
LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
REFERENCE_LOG = REPO / "tests" / "fixtures" / "logs" / "ref_gpu_startup_mtp.log"


@pytest.fixture
def view(qtbot, ui_home: Path) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    store = ProfileStore()
    profile = profile_from_yaml(PROFILE.read_text(encoding="utf-8"), str(PROFILE))
    store.save(profile)
    logs = data_dir() / "logs"
    logs.mkdir(parents=True)
    shutil.copy(LOG, logs / f"{file_stem(profile.name)}-20260101-000000.log")
    session = ProfileSession(store)
    session.reload()
    v = DiagnosticsView(session)
    qtbot.addWidget(v)
    v.narr_box.setValue(43.0)  # the post's numbers, typed as a user would
    v.code_box.setValue(54.0)
    with qtbot.waitSignal(v.diagnosed, timeout=15000):
        v.set_target(session.get(profile.name), None)
    with qtbot.waitSignal(v.diagnosed, timeout=15000):
        v.reference_combo.setCurrentIndex(v.reference_combo.findData("recipe-3090-claimed"))
    return v


def test_the_split_names_time_per_pass_and_not_acceptance(view: DiagnosticsView) -> None:
    text = view.split_label.text()
    assert text.startswith(
        "<b>The gap is in time per pass, not acceptance: narrative 82.6 vs 51.1 ms per pass"
    )
    assert "so acceptance is not the cause.</b>" in text
    assert "narrative: yours 43 tok/s = 3.55 tok/pass × 12.1 pass/s (82.6 ms per pass); reference 66" in text
    assert "code: yours 54 tok/s = 3.55 tok/pass × 15.2 pass/s (65.7 ms per pass)" in text


def test_boot_log_facts_that_differ_come_first(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    view.tabs.setCurrentWidget(view.boot)
    rows = view.boot.texts()
    assert [r[0] for r in rows[:2]] == ["≠ vLLM version", "≠ image digest"]
    facts = {r[0][2:]: r for r in rows}
    assert facts["CUDA-graph mode"][1].startswith("PIECEWISE (downgraded from FULL_AND_PIECEWISE")
    assert facts["CUDA-graph mode"][2] == "unknown: how to get it in the tooltip"
    assert "ask the reference's author" in view.boot.item(rows.index(facts["CUDA-graph mode"]), 2).toolTip()
    assert facts["KV cache dtype"][1:] == ["fp8_e5m2", "fp8_e5m2"]
    shots = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if shots:  # looked at by a person: the whole view on the founding case
        view.resize(1500, 900)
        view.show()
        qtbot.waitExposed(view)
        view.grab().save(str(Path(shots) / "diagnostics-gap-split.png"))
        view.tabs.setCurrentWidget(view.causes)
        view.grab().save(str(Path(shots) / "diagnostics-causes.png"))


def test_causes_say_what_is_not_the_cause_and_why(view: DiagnosticsView) -> None:
    rows = {r[1]: r for r in view.causes.texts()}
    assert rows["Acceptance (tokens per pass)"][0] == "not the cause"
    assert rows["Power cap"][0] == "not the cause"
    assert rows["Power cap"][2] == "your cap 330 W is above the reference's 230 W."
    assert rows["Another vLLM build or patches than the reference's"][0] == "likely"
    verdicts = [r[0] for r in view.causes.texts()]
    assert verdicts[0] == "likely" and verdicts[-1] == "not the cause"


def test_a_reference_log_fills_the_reference_column(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_reference_log(REFERENCE_LOG)
    facts = {r[0][2:]: r for r in view.boot.texts()}
    assert facts["attention backend"][1:] == ["FLASHINFER", "FLASHINFER"]
    assert facts["verify batch in captured sizes"][2].startswith("NO: runs eager")
    assert "reference log ref_gpu_startup_mtp.log" in view.sources.text()
