"""Shipped references, the user's own, and loader errors that name file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.diagnose.references import (
    ReferenceError,
    find_reference,
    load_references,
    reference_from_compose,
    references_from_yaml,
    save_reference,
    user_references_dir,
)
from llm_dyno.core.profiles.diff import diff_profiles
from tests.core.diagnose.helpers import SHARED_COMPOSE, founding_profile


def test_shipped_references_hold_the_published_numbers() -> None:
    ids = {r.id for r in load_references()}
    assert {"founding-post-3090-330w", "recipe-3090-claimed", "recipe-3090-default-20k"} <= ids
    founding = find_reference("founding-post-3090-330w")
    assert (founding.numbers.narrative_tps, founding.numbers.code_tps) == (43, 54)
    assert founding.numbers.acceptance_per_position == (0.93, 0.866, 0.739)
    assert founding.hardware.power_limit_w == 330 and founding.hardware.driver == "580.119.02"
    recipe = find_reference("recipe-3090-claimed")
    assert (recipe.numbers.narrative_tps, recipe.numbers.code_tps) == (66, 84)
    assert recipe.numbers.acceptance_per_position == (0.92, 0.81, 0.64)
    assert recipe.hardware.power_limit_w == 230
    minimal = find_reference("recipe-3090-minimal-no-spec")  # table row inherits the defaults
    assert minimal.numbers.code_tps == 32.6 and minimal.image == recipe.image


def test_founding_reference_profile_is_the_post_compose() -> None:
    profile = find_reference("founding-post-3090-330w").load_profile()
    assert profile is not None
    assert [r for r in diff_profiles(profile, founding_profile()) if r.group != "notes"] == []


def test_loader_errors_name_file_line_and_field() -> None:
    text = "id: mine\ntitle: t\nnumbers:\n  narrative_tps: 40\n  acceptance_per_position: [93, 86]\n"
    with pytest.raises(ReferenceError) as err:
        references_from_yaml(text, "mine.yaml")
    assert err.value.where is not None
    assert (err.value.where.file, err.value.where.line) == ("mine.yaml", 5)
    assert err.value.where.field == "numbers.acceptance_per_position"
    assert "0.93" in str(err.value)
    text = "references:\n  - id: a\n    title: t\n  - id: b\n    title: t\n    gpu: x\n"
    with pytest.raises(ReferenceError) as err2:
        references_from_yaml(text, "t.yaml")
    assert (
        err2.value.where is not None
        and err2.value.where.line == 6
        and "unknown field 'gpu'" in str(err2.value)
    )


def test_user_reference_from_a_compose_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    ref = reference_from_compose(
        SHARED_COMPOSE.read_text(encoding="utf-8"),
        ref_id="my-3090",
        title="my rig",
        narrative_tps=45.0,
        code_tps=58.0,
        acceptance_per_position=(0.9, 0.8, 0.7),
        gpu="NVIDIA GeForce RTX 3090",
        power_limit_w=330,
    )
    path = save_reference(ref)
    assert path.parent == user_references_dir() == tmp_path / "data" / "references"
    again = find_reference("my-3090")
    assert again.numbers.code_tps == 58.0 and again.image_ref == founding_profile().docker.image  # type: ignore[union-attr]
    loaded = again.load_profile()
    assert loaded is not None and loaded.args == founding_profile().args


def test_unknown_reference_lists_the_known_ones() -> None:
    with pytest.raises(ReferenceError, match="recipe-3090-claimed"):
        find_reference("nope")
