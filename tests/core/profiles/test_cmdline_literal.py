"""A pasted ``docker run -e 'X=${foo}'``: the single quotes kept the shell from filling ``${foo}`` in, so
the container gets the literal text ``${foo}``. The profile keeps it literal (``$${foo}``, as Compose
escapes it) and the import says so; double-quoted or unquoted, ``${foo}`` stays a reference filled in at
launch, as before. Through the CLI in a subprocess: ``profile import`` then ``plan --json``, whose
``container`` is what launch hands to Docker (the same function builds both). Issue 23."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.support.cli import cli_in as _cli

LINE = "docker run -p 8000:8000 {env} vllm/vllm-openai:v0.11.0 --model m --served-model-name {arg}\n"


@pytest.mark.parametrize(
    ("env", "arg", "literal"),
    [
        ("-e 'X=${foo}'", "'${foo}'", True),  # single quotes: the shell passes ${foo} as written
        ("-e X=\\${foo}", "\\${foo}", True),  # an escaped $ too
        ('-e "X=${foo}"', '"${foo}"', False),  # double quotes: the shell fills it in (today's reading)
        ("-e X=${foo}", "${foo}", False),  # unquoted: likewise
    ],
)
def test_a_single_quoted_variable_stays_literal(tmp_path: Path, env: str, arg: str, literal: bool) -> None:
    pasted = tmp_path / "run.sh"
    pasted.write_text(LINE.format(env=env, arg=arg))
    home = tmp_path / "home"
    base = {k: v for k, v in os.environ.items() if k != "foo"}
    imported = _cli(home, base, "profile", "import", str(pasted), "--name", "lit")
    assert imported.returncode == 0, imported.stderr
    stored = yaml.safe_load((home / "config" / "profiles" / "lit.yaml").read_text())
    assert stored["env"]["X"] == ("$${foo}" if literal else "${foo}")
    said = "${foo} is in single quotes (or its $ is escaped), so a shell passes the text ${foo} instead"
    assert (f"line 1: {said} of filling it in; the container gets that text" in imported.stderr) is literal

    planned = _cli(home, {**base, "foo": "at-launch"}, "plan", "lit", "--json")
    assert planned.returncode == 0, planned.stderr
    container = json.loads(planned.stdout)["container"]
    assert container["environment"]["X"] == ("${foo}" if literal else "at-launch")
    assert container["command"][-1] == ("${foo}" if literal else "at-launch")


@pytest.mark.parametrize(
    "value",
    ["$HOME/x", "${foo}bar", "a$b", "\\${foo}", "price $5", "$"],
)
def test_a_single_quoted_value_that_is_no_reference_is_kept_without_a_warning(
    tmp_path: Path, value: str
) -> None:
    """Single quotes around a value that is not one ``${…}`` reference: the shell passes it as written,
    and so does launch (it fills in whole references only), so the quoting changed nothing the import
    must say; it said "single-quoted" or "shell variables are kept as written, not expanded" before."""
    pasted = tmp_path / "run.sh"
    pasted.write_text(LINE.format(env=f"-e 'X={value}'", arg="m"))
    home = tmp_path / "home"
    base = {k: v for k, v in os.environ.items() if k not in ("foo", "b")}
    imported = _cli(home, base, "profile", "import", str(pasted), "--name", "lit")
    assert imported.returncode == 0, imported.stderr
    assert "quote" not in imported.stderr and "not expanded" not in imported.stderr, imported.stderr
    assert yaml.safe_load((home / "config" / "profiles" / "lit.yaml").read_text())["env"]["X"] == value
    planned = _cli(home, {**base, "foo": "F", "HOME": "/h", "b": "B"}, "plan", "lit", "--json")
    assert json.loads(planned.stdout)["container"]["environment"]["X"] == value  # the text docker run gives


def test_a_double_quoted_value_with_a_variable_inside_is_still_named(tmp_path: Path) -> None:
    """Double quotes: a shell fills ``$HOME`` in; the app keeps ``$HOME/x`` as written, which it says;
    a whole reference is filled in at launch, which it says too."""
    pasted = tmp_path / "run.sh"
    pasted.write_text(LINE.format(env='-e "X=$HOME/x" -e "Y=$HOME"', arg="m"))
    imported = _cli(tmp_path / "home", dict(os.environ), "profile", "import", str(pasted))
    assert imported.returncode == 0, imported.stderr
    assert "'$HOME/x': shell variables are kept as written, not expanded" in imported.stderr
    assert "'$HOME': filled in from your environment at launch" in imported.stderr


def test_a_quoted_reference_to_a_secret_stays_a_reference_and_says_why(tmp_path: Path) -> None:
    pasted = tmp_path / "run.sh"
    pasted.write_text(LINE.format(env="-e 'HF_TOKEN=${HF_TOKEN}'", arg="m"))
    home = tmp_path / "home"
    imported = _cli(home, dict(os.environ), "profile", "import", str(pasted), "--name", "lit")
    assert imported.returncode == 0, imported.stderr
    assert "line 1: ${HF_TOKEN} is quoted, so docker run would pass the text ${HF_TOKEN}" in imported.stderr
    assert "held a literal secret" not in imported.stderr  # it held the text ${HF_TOKEN}, no secret
    assert yaml.safe_load((home / "config" / "profiles" / "lit.yaml").read_text())["env"] == {
        "HF_TOKEN": "${HF_TOKEN}"
    }
