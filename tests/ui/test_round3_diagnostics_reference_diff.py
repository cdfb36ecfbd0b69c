"""The Diagnostics view's configuration table (issue 28, in the "Config and environment" tab): the
founding post's compose, imported by the real importer and stored as a profile, against the recipe's own
compose shipped with its table row. Each differing setting is a row saying whether it matters; shared
settings are rows of their own; a reference that publishes figures only says so and names its rows
that have a compose."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.ui.diagnostics.diagnostics_view import DiagnosticsView
from llm_dyno.ui.session import ProfileSession

FOUNDING = Path("/work/shared/reference/founding-compose.yml")
REPO = Path(__file__).resolve().parents[2]
WAIT_MS = 15000


def _founding_text() -> str:
    # the user's compose as posted; the shipped copy is the same text when the shared folder is absent
    path = FOUNDING if FOUNDING.is_file() else REPO / "resources" / "references" / "founding-compose.yml"
    return path.read_text(encoding="utf-8")


@pytest.fixture
def view(qtbot, ui_home: Path, tmp_path: Path) -> DiagnosticsView:  # type: ignore[no-untyped-def]
    compose = tmp_path / "docker-compose.yml"  # the test's own copy of the user's file
    compose.write_text(_founding_text(), encoding="utf-8")
    profile = import_text(compose.read_text(encoding="utf-8"), source=str(compose), name="founding").profile
    store = ProfileStore()
    store.save(profile)
    session = ProfileSession(store)
    session.reload()
    v = DiagnosticsView(session)
    qtbot.addWidget(v)
    with qtbot.waitSignal(v.diagnosed, timeout=WAIT_MS):
        v.set_target(session.get("founding"), None)
    with qtbot.waitSignal(v.diagnosed, timeout=WAIT_MS):
        v.reference_combo.setCurrentIndex(v.reference_combo.findData("recipe-3090-default-20k"))
    return v


def _rows(v: DiagnosticsView) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in v.reference_config.texts()}


def test_the_compose_tab_shows_each_difference_and_what_both_share(view: DiagnosticsView) -> None:
    panel = view.reference_config
    config_tab = next(i for i in range(view.tabs.count()) if view.tabs.tabText(i) == "Config and environment")
    view.tabs.setCurrentIndex(config_tab)
    view.show()
    assert panel.isVisible() and panel.table.isVisible() and view.diff.isVisible()  # beside the env rows
    # the configuration rows are not repeated in the environment table
    assert [view.diff.item(r, 0).text() for r in range(view.diff.rowCount())] == [
        "env"
    ] * view.diff.rowCount()
    assert "noonghunna/qwen36-27b-single-3090 compose/docker-compose.yml @ 061a5f1" in panel.header.text()
    rows = _rows(view)
    genesis = rows["start script: Genesis patches"]
    assert genesis[0].startswith("v5.x single script") and genesis[1].startswith("v7.x modular package")
    assert genesis[2] == "yes"
    assert rows["start script: pip install"] == ["xxhash", "xxhash pandas scipy", "yes"]
    assert rows["environment: PYTORCH_CUDA_ALLOC_CONF"] == [
        "expandable_segments:True,max_split_size_mb=512",
        "expandable_segments:True,max_split_size_mb:512",
        "yes",
    ]
    assert rows["container: image"][1] == "vllm/vllm-openai:nightly-07351e0883470724dd5a7e9730ed10e01fc99d08"
    assert rows["engine flags: --max-model-len"] == ["75000", "20000", "no"]
    assert rows["KV cache dtype"] == ["fp8_e5m2", "fp8_e5m2", "shared"]
    # the rows that matter come first, then those that do not, then the shared settings
    marks = [row[3] for row in panel.texts()]
    assert marks == sorted(marks, key=["yes", "no", "shared"].index)
    # why and the source are the row's tooltip
    tip = panel.table.item(0, 0).toolTip()
    assert "source:" in tip and "matters" in tip


def test_the_tab_follows_the_profile_and_the_reference(qtbot, view: DiagnosticsView) -> None:  # type: ignore[no-untyped-def]
    profile = view.profile
    assert profile is not None and view.session is not None
    fixed = profile.with_changes(
        env={**profile.env, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:512"}
    )
    view.session.save(fixed)
    with qtbot.waitSignal(view.diagnosed, timeout=WAIT_MS):
        view.set_target(fixed, None)
    rows = _rows(view)
    assert "environment: PYTORCH_CUDA_ALLOC_CONF" not in rows  # written as the reference writes it now
    assert "start script: Genesis patches" in rows
    # a reference that publishes figures only: no rows, and the rows of its source that have a compose
    with qtbot.waitSignal(view.diagnosed, timeout=WAIT_MS):
        view.reference_combo.setCurrentIndex(view.reference_combo.findData("recipe-3090-claimed"))
    assert view.reference_config.texts() == []
    header = view.reference_config.header.text()
    assert "publishes figures only" in header and "recipe-3090-default-20k" in header
    # no reference at all: the panel steps aside for the view's own "no reference" text
    with qtbot.waitSignal(view.diagnosed, timeout=WAIT_MS):
        view.reference_combo.setCurrentIndex(0)  # "No reference"
    assert view.reference() is None and view.reference_config.isHidden()
