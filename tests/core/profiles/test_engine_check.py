"""The engine-flag check lives in the Profile model: a file, ``model_validate`` and ``with_changes`` all
refuse ``--max-model-len abc``, and every front end reports it the same way (file, line, field)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from llm_dyno.core.errors import ProfileError
from llm_dyno.core.profiles.model import Profile
from tests.support.cli import cli as _cli

BAD = (
    "schema: 1\nname: bad\nruntime: process\nmodel: m\n"
    "args:\n  - --port\n  - '8123'\n  - --max-model-len\n  - abc\n"
)
MESSAGE = "--max-model-len 'abc': expected a whole number of tokens, e.g. 32768"


def test_validate_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    done = _cli(tmp_path, "profile", "validate", str(path))
    assert done.returncode != 0
    assert f"{path}:8, field 'args[2]': {MESSAGE}" in done.stderr
    assert "fix the value of --max-model-len" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    path.write_text(BAD.replace("abc", "'4096'"))
    done = _cli(tmp_path, "profile", "validate", str(path))
    assert done.returncode == 0, done.stderr
    assert "valid profile 'bad'" in done.stdout


def test_launch_of_a_stored_profile_with_a_bad_flag_starts_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "profiles"
    folder.mkdir(parents=True)
    (folder / "bad.yaml").write_text(BAD)
    done = _cli(tmp_path, "launch", "bad")
    assert done.returncode != 0
    assert f"bad.yaml:8, field 'args[2]': {MESSAGE}" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "data" / "servers").exists() or not any((tmp_path / "data" / "servers").iterdir())


def test_model_validate_and_with_changes_refuse_what_a_file_refuses() -> None:
    good = Profile.model_validate({"name": "p", "runtime": "process", "model": "m", "args": ["--port", "1"]})
    with pytest.raises(ValidationError, match="expected a whole number of tokens"):
        Profile.model_validate({**good.model_dump(), "args": ("--max-model-len", "abc")})
    with pytest.raises(ProfileError) as err:
        good.with_changes(args=(*good.args, "--max-model-len", "abc"))
    assert err.value.where is not None and err.value.where.field == "args[2]"
    assert err.value.message == MESSAGE and err.value.hint == "fix the value of --max-model-len"
    assert good.with_changes(args=(*good.args, "--max-model-len", "32k")).engine().max_model_len == 32000
