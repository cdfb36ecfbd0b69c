"""Issue 28's one-click check, in the window: a finding applied to a copy in the Diagnostics view is
offered "Measure … against …", which selects the copy and opens the Benchmark view's A/B with the
original as side A (what `llm-dyno ab COPY --against ORIGINAL` runs); the A/B tab takes any profile as
side A, or the profile without its speculative config as before."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from tests.ui.clicks import click_profile

REPO = Path(__file__).resolve().parents[2]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
SIZES = "'cudagraph_capture_sizes': [1, 2, 4, 8], 'max_cudagraph_capture_size': 8"
NAME = "qwen36-27b-mtp"
FIX = "verify-batch-not-captured"


def test_a_copy_made_in_diagnostics_is_measured_against_its_original(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "one-size.log"
    text = FOUNDING_LOG.read_text(encoding="utf-8")
    assert SIZES in text
    log.write_text(text.replace(SIZES, "'cudagraph_capture_sizes': [1], 'max_cudagraph_capture_size': 1"))
    click_profile(window, NAME)
    window.show_view("diagnostics")
    view = window.diagnostics_view
    with qtbot.waitSignal(view.diagnosed, timeout=20000):
        view.set_log(log)
    qtbot.waitUntil(
        lambda: view.gathered is not None and view.gathered.diagnosis.get(FIX) is not None, timeout=20000
    )
    assert not view.measure_button.isVisible()  # nothing made yet

    copy = view.apply_to_copy(FIX)  # what the finding's "Apply to a copy" button calls
    assert copy is not None and copy != NAME
    qtbot.waitUntil(lambda: window.editor.profile_name == copy, timeout=10000)
    assert view.measure_button.isVisible() and copy in view.measure_button.text()

    qtbot.mouseClick(view.measure_button, Qt.MouseButton.LeftButton)
    assert window.current_view() == "benchmark"
    bench = window.bench_view
    ab = bench.ab
    assert bench.tabs.currentWidget() is ab
    assert window.editor.profile_name == copy
    assert ab.against_box.currentData() == NAME and ab.against is not None and ab.against.name == NAME
    assert ab.run_button.text() == "Run A/B" and ab.run_button.isEnabled(), ab.status.text()

    # side A back to the profile itself without spec decoding: the spec-decode A/B as before
    ab.against_box.setCurrentIndex(ab.against_box.findData(None))
    assert ab.against is None and ab.run_button.text() == "Run spec-decode A/B"
    assert ab.run_button.isEnabled()  # the copy keeps the --speculative-config
    # another profile with no spec config can still be measured against a profile named as side A
    click_profile(window, "cpu-demo")
    assert not ab.run_button.isEnabled()  # no --speculative-config, and side A is "itself without"
    ab.set_against(NAME)
    assert ab.run_button.isEnabled() and ab.against is not None and ab.against.name == NAME
