"""A pasted ``docker run`` line's volumes as the shell reads them (issue 29, round 3), through
``llm-dyno profile import -`` with the line on standard input, in a subprocess run in a folder of the
test: ``$(pwd)`` / ``$PWD`` / ``${PWD}`` are that folder, ``$name`` comes from the environment the
import runs in, ``~`` stays the home folder (launch and every export read it so); an unset variable and
any other command substitution are refused, and the substitution is never run. After a compose export
and an import of that file the volume is the same folder, never a named volume ``<project>_$(pwd)``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import cli

IMAGE = "vllm/vllm-openai:v0.11.0"


def _paste(
    home: Path, folder: Path, line: str, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``llm-dyno profile import - ARGS`` run in ``folder`` with ``line`` on standard input."""
    base = {k: v for k, v in os.environ.items() if k not in ("hf_cache_dir", "MODELS", "EMPTY")}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", "profile", "import", "-", *args],
        input=line,
        cwd=folder,
        env={**base, **(env or {}), "LLM_DYNO_HOME": str(home), "NO_COLOR": "1", "PWD": "/elsewhere"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder.resolve()


def _volumes(stdout: str) -> list[str]:
    profile: dict[str, Any] = yaml.safe_load(stdout)
    return list(profile["docker"]["volumes"])


def test_pasted_volumes_are_the_folders_the_shell_would_mount(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    line = (
        f'docker run --gpus all -p 8000:8000 -v $(pwd):/workspace -v "$PWD"/models:/m \\\n'
        f"  -v ${{PWD}}/w:/w -v $hf_cache_dir:/root/.cache/huggingface -v ~/models:/home-models \\\n"
        f"  -v$(pwd)/a:/a --volume=$PWD/b:/b \\\n"
        f"  --mount type=bind,src=$(pwd)/data,dst=/data,readonly {IMAGE} --model m\n"
    )
    done = _paste(tmp_path / "home", folder, line, "--dry-run", env={"hf_cache_dir": "/srv/hf"})
    assert done.returncode == 0, done.stderr
    # $PWD is the folder the import runs in, not a stale PWD inherited from elsewhere
    assert _volumes(done.stdout) == [
        f"{folder}:/workspace",
        f"{folder}/models:/m",
        f"{folder}/w:/w",
        "/srv/hf:/root/.cache/huggingface",
        "~/models:/home-models",
        f"{folder}/a:/a",
        f"{folder}/b:/b",
        f"{folder}/data:/data:ro",
    ]
    assert "$" not in done.stdout
    assert (
        f"'$(pwd):/workspace' is mounted as a shell would when the line is pasted here: '{folder}:/workspace'"
        in done.stderr
    )
    assert "kept as written" not in done.stderr


def test_a_variable_set_by_the_pasted_block_is_the_one_used(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    line = f"hf_cache_dir=/data/hf\ndocker run -p 8000:8000 -v $hf_cache_dir:/root/.cache/hf {IMAGE} m\n"
    done = _paste(tmp_path / "home", folder, line, "--dry-run", env={"hf_cache_dir": "/not/this"})
    assert done.returncode == 0, done.stderr
    assert _volumes(done.stdout) == ["/data/hf:/root/.cache/hf"]


def test_a_compose_export_and_import_keep_the_same_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    home = tmp_path / "home"
    line = f"docker run -p 8000:8000 -v $(pwd):/workspace -v $MODELS/llama:/models {IMAGE} --model /models\n"
    done = _paste(home, folder, line, "--name", "p", env={"MODELS": "/srv/models"})
    assert done.returncode == 0, done.stderr
    exported = cli(home, "profile", "export", "p", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    assert "$" not in exported.stdout  # no reference left for Compose to read another way
    elsewhere = tmp_path / "exported"
    elsewhere.mkdir()
    (elsewhere / "docker-compose.yml").write_text(exported.stdout)
    back = cli(home, "profile", "import", str(elsewhere / "docker-compose.yml"), "--name", "q")
    assert back.returncode == 0, back.stderr
    for name in ("p", "q"):
        shown = cli(home, "profile", "show", name)
        assert shown.returncode == 0, shown.stderr
        assert _volumes(shown.stdout) == [f"{folder}:/workspace", "/srv/models/llama:/models"], name
        plan = cli(home, "plan", name, "--json")
        assert plan.returncode == 0, plan.stderr
        text = json.dumps(json.loads(plan.stdout)["container"])
        assert f"{folder}:/workspace" in text and "_$(pwd)" not in text and "exported_" not in text


def test_other_command_substitutions_are_refused_and_never_run(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    proof = tmp_path / "ran"
    for word in (f"$(touch {proof})", f"`touch {proof}`", "$(id -u)", "`pwd`"):
        line = f"docker run -p 8000:8000 -v {word}:/w {IMAGE} m\n"
        done = _paste(tmp_path / "home", folder, line, "--dry-run")
        assert done.returncode != 0, (word, done.stdout)
        assert "Traceback" not in done.stderr
        assert f"command substitution ({word})" in done.stderr, done.stderr
        assert "never runs commands" in done.stderr and "replace it with the value it prints" in done.stderr
    assert not proof.exists()


def test_an_unset_or_empty_variable_is_refused_naming_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    for word, name in (("$MODELS/x", "$MODELS"), ("${EMPTY}", "$EMPTY")):
        line = f"docker run -p 8000:8000 -v {word}:/models {IMAGE} m\n"
        done = _paste(tmp_path / "home", folder, line, "--dry-run", env={"EMPTY": ""})
        assert done.returncode != 0, (word, done.stdout)
        assert f"{name} is not set here (or is empty)" in done.stderr, done.stderr
        assert "broken path" in done.stderr and f"set {name[1:]} in the environment" in done.stderr
    # a default the shell would use is used
    line = f"docker run -p 8000:8000 -v ${{MODELS:-/srv/m}}:/models {IMAGE} m\n"
    done = _paste(tmp_path / "home", folder, line, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert _volumes(done.stdout) == ["/srv/m:/models"]


def test_a_single_quoted_dollar_is_passed_as_written(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    line = f"docker run -p 8000:8000 -v '/data/$x':/w {IMAGE} m\n"
    done = _paste(tmp_path / "home", folder, line, "--dry-run", env={"x": "filled"})
    assert done.returncode == 0, done.stderr
    assert _volumes(done.stdout) == ["/data/$x:/w"]


def test_a_secret_named_variable_is_never_filled_into_the_profile(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    line = f"docker run -p 8000:8000 -v /data/$HF_TOKEN:/w {IMAGE} m\n"
    done = _paste(tmp_path / "home", folder, line, "--dry-run", env={"HF_TOKEN": "hf_notarealtokenvalue123"})
    assert done.returncode != 0, done.stdout
    assert "names $HF_TOKEN" in done.stderr and "hf_notarealtokenvalue123" not in done.stderr + done.stdout
