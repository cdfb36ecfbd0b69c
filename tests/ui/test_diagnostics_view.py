"""The Diagnostics view on the founding scenario: the founding compose (real importer) as a stored
profile, the founding post's recorded log lines as its latest launch log, the recipe as reference."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llm_dyno.core.paths import data_dir
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.store import ProfileStore, file_stem
from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from llm_dyno.ui.session import ProfileSession

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "resources" / "references" / "founding-compose.yml"
LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
FOUND = [
    "claim-above-published", "image-differs-from-reference", "cuda-graphs-downgraded",
    "compile-cache-not-on-volume",
]  # fmt: skip


@pytest.fixture
def view(qtbot, ui_home: Path) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    store = ProfileStore()
    profile = import_text(COMPOSE.read_text(encoding="utf-8"), source=str(COMPOSE)).profile
    store.save(profile)
    logs = data_dir() / "logs"
    logs.mkdir(parents=True)
    shutil.copy(LOG, logs / f"{file_stem(profile.name)}-20260101-000000.log")
    session = ProfileSession(store)
    session.reload()
    v = DiagnosticsView(session)
    qtbot.addWidget(v)
    v.narr_box.setValue(43.0)  # the post's own numbers, typed as a user would
    v.code_box.setValue(54.0)
    with qtbot.waitSignal(v.diagnosed, timeout=15000):
        v.set_target(session.get(profile.name), None)
    with qtbot.waitSignal(v.diagnosed, timeout=15000):
        v.reference_combo.setCurrentIndex(v.reference_combo.findData("recipe-3090-claimed"))
    return v


def test_founding_findings_are_listed_in_rank_order(view: DiagnosticsView) -> None:
    assert view.gathered is not None
    ids = view.gathered.diagnosis.ids()
    assert [i for i in ids if i in FOUND] == FOUND
    shown = [view.findings.topLevelItem(i).text(0) for i in range(view.findings.topLevelItemCount())]
    assert shown[0] == "1. Claimed 66 / 84 TPS; its source's own table: 55 / 70.5 at best"
    # the app publishes the post's 8020:8000 on loopback, as its plan says: no exposure finding
    assert all(t[0].isdigit() for t in shown) and len(shown) == len(ids)
    assert "founding_launch" in view.sources.text() or "log" in view.sources.text()


def test_an_open_port_is_a_security_finding_shown_apart(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    """Published as in the file (every interface) and without a key: a security finding, under its own
    heading after the speed ranking."""
    profile = view.profile
    assert profile is not None and profile.docker is not None and view.session is not None
    opened = profile.with_changes(docker=profile.docker.model_copy(update={"bind": "file"}))
    view.session.save(opened)
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_target(opened, None)
    shown = [view.findings.topLevelItem(i).text(0) for i in range(view.findings.topLevelItemCount())]
    heading = shown.index("Security — shown apart, not part of the speed ranking")
    assert shown[heading + 1] == "• Server reachable from the network without an API key"
    assert all(t[0].isdigit() for t in shown[:heading])
    assert shown[0] == "1. Claimed 66 / 84 TPS; its source's own table: 55 / 70.5 at best"


def test_roofline_and_reference_table_of_the_founding_post(view: DiagnosticsView) -> None:
    r = view.gauge.roofline
    assert (
        r is not None
        and round(r.ceiling_tps) == 183
        and r.plausible_share == pytest.approx(54 / r.ceiling_tps)
    )
    rows = {
        view.diff.item(i, 1).text(): (view.diff.item(i, 2).text(), view.diff.item(i, 3).text())
        for i in range(view.diff.rowCount())
    }
    # "Yours" from the log's SpecDecoding line, the typed TPS, and the engine flags the recipe states
    assert rows["acceptance per position"] == ("93 % / 87 % / 74 % (log)", "92 % / 81 % / 64 %")
    assert rows["narrative TPS"] == ("43", "66") and rows["code TPS"] == ("54", "84")
    assert rows["speculative decoding"] == ("mtp, 3 tokens", "mtp, 3 tokens")


def test_typed_numbers_are_remembered_per_profile(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    profile = view.profile
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_target(None, None)
    view.narr_box.setValue(0.0)
    view.code_box.setValue(0.0)
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_target(profile, None)
    assert (view.narr_box.value(), view.code_box.value()) == (43.0, 54.0)


def test_expanding_a_finding_shows_its_log_evidence_and_advice(view: DiagnosticsView) -> None:
    item = view.findings.item_for("cuda-graphs-downgraded")
    assert item is not None and not item.isExpanded()
    texts = view.findings.expand_finding("cuda-graphs-downgraded")
    assert item.isExpanded()
    assert any(t.startswith("log:4:") and "FlashInferBackend" in t for t in texts), texts
    assert any(t.startswith("→ ") for t in texts)


def test_the_image_finding_shows_the_diff_row_and_the_diff_table_has_it(view: DiagnosticsView) -> None:
    texts = view.findings.expand_finding("image-differs-from-reference")
    assert any("sha256:9bba4628" in t for t in texts)
    rows = [(view.diff.item(r, 1).text(), view.diff.item(r, 3).text()) for r in range(view.diff.rowCount())]
    assert ("image", "vllm/vllm-openai:nightly-07351e0883470724dd5a7e9730ed10e01fc99d08") in rows


def test_apply_to_a_copy_creates_the_fixed_profile_in_the_store(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    assert view.session is not None and view.profile is not None
    original = view.profile
    with qtbot.waitSignal(view.copyCreated) as created:
        name = view.apply_to_copy("compile-cache-not-on-volume")
    assert name is not None and created.args == [name]
    copy = ProfileStore().get(name)
    assert copy.docker is not None and "vllm-compile-cache:/root/.cache/vllm" in copy.docker.volumes
    assert ProfileStore().get(original.name) == original  # the original is untouched


def test_the_reference_choice_is_remembered_per_profile(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    profile = view.profile
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_target(None, None)
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_target(profile, None)
    assert view.reference() is not None and view.reference().id == "recipe-3090-claimed"  # type: ignore[union-attr]


def test_your_tps_boxes_show_auto_and_take_typing(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtGui import QFocusEvent
    from PySide6.QtWidgets import QApplication

    view.resize(1100, 700)
    view.show()
    qtbot.waitExposed(view)
    box = view.code_box
    box.setValue(0)
    assert box.text() == "auto" and box.lineEdit().width() > box.fontMetrics().horizontalAdvance("auto")
    qtbot.mouseClick(box.lineEdit(), Qt.MouseButton.LeftButton)
    qtbot.keyClicks(box, "61")  # straight over "auto", no select-all first
    assert box.value() == 61.0
    # focus comes back (sent directly: an offscreen window among many may not be the active one)
    QApplication.sendEvent(box, QFocusEvent(QEvent.Type.FocusIn, Qt.FocusReason.MouseFocusReason))
    edit = box.lineEdit()
    qtbot.waitUntil(lambda: edit.hasSelectedText() and edit.selectedText() == edit.text(), timeout=2000)
    qtbot.keyClicks(box, "47.5")
    assert box.value() == 47.5


def test_advice_wraps_instead_of_being_cut(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    tree = view.findings
    tree.resize(420, 600)
    tree.show()
    qtbot.waitExposed(tree)
    texts = tree.expand_finding("cuda-graphs-downgraded")
    advice = next(t for t in texts if t.startswith("→ "))
    line = tree.fontMetrics().height()
    assert (
        tree.fontMetrics().horizontalAdvance(advice) > 2 * tree.viewport().width()
    )  # it cannot fit one line
    item = tree.item_for("cuda-graphs-downgraded")
    assert item is not None
    child = next(item.child(i) for i in range(item.childCount()) if item.child(i).text(0) == advice)
    qtbot.waitUntil(lambda: tree.visualItemRect(child).height() >= 3 * line, timeout=3000)


def _diagnose(qtbot, session: ProfileSession, name: str) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    v = DiagnosticsView(session)
    qtbot.addWidget(v)
    v.resize(1100, 700)
    v.show()
    with qtbot.waitSignal(v.diagnosed, timeout=15000):
        v.set_target(session.get(name), None)
    return v


def test_the_cpu_demo_gets_no_cuda_findings_and_says_why_there_is_no_reference_table(
    qtbot, store: ProfileStore, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    session = ProfileSession(store)
    session.reload()
    demo = session.get("cpu-demo")
    assert demo is not None and "--enforce-eager" in demo.args  # set on purpose: it starts fast
    v = _diagnose(qtbot, session, "cpu-demo")
    assert v.gathered is not None
    assert "enforce-eager" not in v.gathered.diagnosis.ids()  # CUDA graphs do not exist on a CPU
    # no reference chosen: the pane says so and how to pick one, instead of an empty table
    assert v.diff_stack.currentWidget() is v.no_reference and v.no_reference.isVisible()
    said = v.no_reference.text()
    assert said.startswith("No reference chosen for “cpu-demo”") and "“Compare with” above" in said, said
    # the header is a row of its own, its count never split across lines
    n = len(v.gathered.diagnosis.findings)
    assert f"{n}\u00a0finding" in v.sources.text()
    assert v.sources.width() > 0.9 * (v.width() - 32), (v.sources.width(), v.width())
    lines = v.sources.heightForWidth(v.sources.width()) // v.sources.fontMetrics().lineSpacing()
    assert lines <= 1, v.sources.text()
    folder = os.environ.get("LLM_DYNO_SCREENSHOT_DIR")
    if folder:
        v.grab().save(str(Path(folder) / "diagnostics-cpu-demo.png"))
    # the same flag on a GPU build still costs half the speed, and is said
    gpu = demo.with_changes(name="gpu-eager", env={})
    store.save(gpu)
    session.reload()
    assert "enforce-eager" in _diagnose(qtbot, session, "gpu-eager").gathered.diagnosis.ids()
    # and the CLI's diagnosis agrees
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for name, fires in (("cpu-demo", False), ("gpu-eager", True)):
        done = subprocess.run(
            [sys.executable, "-m", "llm_dyno", "diagnose", name], env=env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert ("Eager mode" in done.stdout) is fires, done.stdout
