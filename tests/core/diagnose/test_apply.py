"""apply_finding makes the suggested change on a renamed copy, with the flag editor."""

from __future__ import annotations

import pytest

from llm_dyno.core.diagnose import ApplyError, DiagnosisInput, apply_finding, diagnose
from llm_dyno.core.diagnose.references import find_reference
from llm_dyno.core.diagnose.rules_launch import cuda_graphs_downgraded, enforce_eager
from llm_dyno.core.profiles.diff import diff_profiles
from llm_dyno.core.profiles.importers import import_text
from tests.core.diagnose.helpers import founding_open_profile, founding_profile, log
from tests.core.diagnose.test_rules_launch import VLLM_CPU_CMD


def test_remove_enforce_eager_keeps_the_other_flags_in_order() -> None:
    profile = import_text(VLLM_CPU_CMD, name="tiny").profile
    [finding] = enforce_eager(DiagnosisInput(profile=profile))
    fixed = apply_finding(profile, finding)
    assert fixed.name == "tiny - fix eager"
    assert "--enforce-eager" not in fixed.args
    assert fixed.args == tuple(a for a in profile.args if a != "--enforce-eager")
    assert "--enforce-eager" in profile.args  # the original is untouched


def test_founding_fixes_as_semantic_diffs() -> None:
    profile = founding_open_profile()  # published on 0.0.0.0, so the key finding applies too
    result = diagnose(
        DiagnosisInput(
            profile=profile, reference=find_reference("recipe-3090-claimed"), log=log("founding_launch.log")
        )
    )
    cache = result.get("compile-cache-not-on-volume")
    image = result.get("image-differs-from-reference")
    key = result.get("exposed-without-api-key")
    assert cache is not None and image is not None and key is not None
    volume_rows = {(r.key, r.left, r.right) for r in diff_profiles(profile, apply_finding(profile, cache))}
    assert volume_rows == {("volume /root/.cache/vllm", None, "vllm-compile-cache:/root/.cache/vllm")}
    rows = {(r.key, r.right) for r in diff_profiles(profile, apply_finding(profile, image))}
    assert rows == {
        ("image", "vllm/vllm-openai:nightly-07351e0883470724dd5a7e9730ed10e01fc99d08"),
        ("image digest", None),
    }
    key_rows = {(r.key, r.right) for r in diff_profiles(profile, apply_finding(profile, key))}
    assert key_rows == {("--api-key", "${VLLM_API_KEY}")}


def test_advice_only_findings_cannot_be_applied() -> None:
    [finding] = cuda_graphs_downgraded(DiagnosisInput(log=log("founding_launch.log")))
    with pytest.raises(ApplyError, match="no change"):
        apply_finding(founding_profile(), finding)


def test_long_names_stay_valid() -> None:
    profile = founding_profile().with_changes(name="x" * 80)
    [finding] = enforce_eager(DiagnosisInput(profile=import_text(VLLM_CPU_CMD).profile))
    fixed = apply_finding(profile.with_changes(args=(*profile.args, "--enforce-eager")), finding)
    assert len(fixed.name) == 80 and fixed.name.endswith(" - fix eager")
