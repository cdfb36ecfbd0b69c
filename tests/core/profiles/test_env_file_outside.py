"""An ``env_file:`` outside the compose file's folder: Compose reads it, the app refuses it (an imported
file may not make the app read files elsewhere) unless the user allows it: ``profile import
--allow-env-file-outside`` (and the import dialog's "Read env files outside the project folder", in
tests/ui/test_import_dialog_env_files.py). Allowed, /proc, devices, FIFOs and links into them stay
refused, and a secret's value still becomes a reference. Through the CLI in a subprocess (issue 23)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TOKEN = "hf_" + "Q" * 34
COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.11.0
    command: m --port 8000
    ports: ["8000:8000"]
    env_file: {env_file}
"""


def _import(tmp_path: Path, env_file: str, *flags: str) -> subprocess.CompletedProcess[str]:
    compose = tmp_path / "proj" / "compose.yaml"
    compose.parent.mkdir(exist_ok=True)
    compose.write_text(COMPOSE.format(env_file=env_file))
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", "profile", "import", str(compose), "--dry-run", *flags],
        env={**os.environ, "LLM_DYNO_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _outside(tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir(exist_ok=True)
    (folder / "vars.env").write_text(f"HF_TOKEN={TOKEN}\nVLLM_LOGGING_LEVEL=DEBUG\n")
    return folder / "vars.env"


def test_outside_the_folder_is_refused_without_the_users_consent(tmp_path: Path) -> None:
    _outside(tmp_path)
    done = _import(tmp_path, "../shared/vars.env")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'proj' / 'compose.yaml'}:6, field 'services.vllm.env_file'" in done.stderr
    assert "is outside the project folder" in done.stderr
    assert "--allow-env-file-outside" in done.stderr  # the way to allow it is named
    assert TOKEN not in done.stderr + done.stdout


def test_allowed_it_is_read_said_and_its_secret_becomes_a_reference(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    done = _import(tmp_path, str(outside), "--allow-env-file-outside")
    assert done.returncode == 0, done.stderr
    env = yaml.safe_load(done.stdout)["env"]
    assert env == {"HF_TOKEN": "${HF_TOKEN}", "VLLM_LOGGING_LEVEL": "DEBUG"}
    assert f"env_file {outside} lies outside the project folder; read because you allowed it" in done.stderr
    assert TOKEN not in done.stderr + done.stdout


@pytest.mark.parametrize("kind", ["proc", "device", "fifo", "link-to-proc", "link-to-device"])
def test_allowed_or_not_system_files_fifos_and_links_to_them_stay_refused(tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "shared"
    outside.mkdir()
    target = {
        "proc": "/proc/self/environ",
        "device": "/dev/zero",
        "fifo": str(outside / "pipe.env"),
        "link-to-proc": str(outside / "proc.env"),
        "link-to-device": str(outside / "zero.env"),
    }[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-to-proc":
        os.symlink("/proc/self/environ", target)
    elif kind == "link-to-device":
        os.symlink("/dev/zero", target)
    done = _import(tmp_path, target, "--allow-env-file-outside")
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "field 'services.vllm.env_file'" in done.stderr
    said = "is not a regular file" if kind == "fifo" else "which holds system state, not settings; not read"
    assert said in done.stderr, done.stderr
    assert "read because you allowed it" not in done.stderr
