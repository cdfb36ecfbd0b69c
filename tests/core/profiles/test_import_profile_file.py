"""Importing an LLM Dyno profile file (one exported or shared) keeps it as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.errors import ProfileError
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import profile_from_yaml
from llm_dyno.core.runtime.process_backend import ProcessRuntime

SHIPPED = Path(__file__).resolve().parents[3] / "profiles"


def test_profile_yaml_imports_as_itself_and_can_be_renamed() -> None:
    text = (SHIPPED / "qwen36-27b-mtp.yaml").read_text()
    result = import_text(text, source="shared.yaml")
    assert result.source_kind == "profile"
    assert result.profile == profile_from_yaml(text)
    renamed = import_text(text, source="shared.yaml", name="mine").profile
    assert renamed.name == "mine" and renamed.args == result.profile.args


def test_broken_profile_yaml_names_file_line_and_field() -> None:
    text = "schema: 1\nname: x\nruntime: process\nmodel: m\nargs: [--max-model-len, lots]\n"
    with pytest.raises(ProfileError) as info:
        import_text(text, source="shared.yaml")
    assert str(info.value).startswith("shared.yaml:5, field 'args[0]'")


def test_process_plan_expands_home_in_the_model_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # a home of its own, with the demo's model folder in it
    (tmp_path / ".cache" / "llm-dyno" / "models" / "tiny-qwen2").mkdir(parents=True)
    text = (SHIPPED / "cpu-demo.yaml").read_text()
    plan = ProcessRuntime().plan(profile_from_yaml(text))
    argv = list(plan.spec.argv)
    model = argv[argv.index("serve") + 1]
    assert not model.startswith("~") and model == str(tmp_path / ".cache/llm-dyno/models/tiny-qwen2")
