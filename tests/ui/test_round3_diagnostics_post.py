"""Issue 28 in the window: the Diagnostics view reads a forum post chosen with "Post…" (the founding
post, copied into the test's folder): the split from the post's own figures, its boot facts with their
post lines, and a typed figure that differs from the post's is used and said."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from tests.ui.diagnostics_window import save_shot

REPO = Path(__file__).resolve().parents[2]
FOUNDING_POST = REPO / "tests" / "fixtures" / "diagnose" / "founding_post.txt"


@pytest.fixture
def view(diagnostics) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    return diagnostics("qwen36-27b-mtp", "recipe-3090-claimed")


def test_a_post_gives_the_split_and_its_boot_facts_with_their_lines(  # type: ignore[no-untyped-def]
    qtbot, view: DiagnosticsView, tmp_path: Path
) -> None:
    post = Path(shutil.copy(FOUNDING_POST, tmp_path / "founding-post.txt"))
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_post(post)
    assert view.post_button.text() == "Post: founding-post.txt"
    assert "The gap is in time per pass, not acceptance" in view.split_label.text()
    rows = {r[0][2:]: i for i, r in enumerate(view.boot.texts())}
    for fact, value in (("attention backend", "FLASHINFER"), ("model weights in memory", "16.87 GiB"),
                        ("CUDA graph sizes captured", "4: 1,2,4,8 (largest 8)")):  # fmt: skip
        cell = view.boot.item(rows[fact], 1)
        assert cell.text() == value and "post line " in cell.toolTip(), fact
    assert "from the post" in view.sources.text()
    save_shot(qtbot, view, "diagnostics-post.png", view.boot)


def test_a_typed_figure_wins_over_the_posts_and_is_said(  # type: ignore[no-untyped-def]
    qtbot, view: DiagnosticsView, tmp_path: Path
) -> None:
    view.narr_box.setValue(50.0)
    post = Path(shutil.copy(FOUNDING_POST, tmp_path / "founding-post.txt"))
    with qtbot.waitSignal(view.diagnosed, timeout=15000):
        view.set_post(post)
    assert "typed narrative TPS 50 is used; the post says 43" in view.sources.text()


def test_a_missing_post_says_why(qtbot, view: DiagnosticsView, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.errorMessage, timeout=5000) as said:
        view.set_post(tmp_path / "nope.txt")
    assert "cannot read the post" in said.args[0] and view.post is None
