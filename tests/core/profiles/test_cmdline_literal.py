"""A pasted ``docker run -e 'X=${foo}'``: the single quotes kept the shell from filling ``${foo}`` in, so
the container gets the literal text ``${foo}``. The profile keeps it literal (``$${foo}``, as Compose
escapes it) and the import says so; double-quoted or unquoted, ``${foo}`` stays a reference filled in at
launch, as before. Through the CLI in a subprocess: ``profile import`` then ``plan --json``, whose
``container`` is what launch hands to Docker (the same function builds both). Issue 23."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

LINE = "docker run -p 8000:8000 {env} vllm/vllm-openai:v0.11.0 --model m --served-model-name {arg}\n"


def _cli(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env={**env, "LLM_DYNO_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


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
    said = "'X=${foo}' is single-quoted (or its $ escaped), so a shell passes it as written: kept literal"
    assert (f"line 1: {said}" in imported.stderr) is literal, imported.stderr

    planned = _cli(home, {**base, "foo": "at-launch"}, "plan", "lit", "--json")
    assert planned.returncode == 0, planned.stderr
    container = json.loads(planned.stdout)["container"]
    assert container["environment"]["X"] == ("${foo}" if literal else "at-launch")
    assert container["command"][-1] == ("${foo}" if literal else "at-launch")
