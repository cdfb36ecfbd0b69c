"""Keys that ``extends`` brings from another service are reported where they are written: an error or a
warning about a key of ``base/common.yml`` names that file, its line and its field, not the extending
compose file (issue 23). Through the CLI in a subprocess (``profile import --dry-run``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMMON = """\
services:
  base:
    image: vllm/vllm-openai:v0.11.0
    ports:
      - 8000:8000
    environment:
      FROM_BASE: ${NEEDED_IN_BASE:?set it for the base}
    stdin_open: true
"""
COMPOSE = """\
services:
  vllm:
    extends:
      file: base/common.yml
      service: base
    command: m --port 8000
    environment:
      OWN: ${NEEDED_HERE:?set it here}
"""


def _import(folder: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEEDED_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "llm_dyno",
            "profile",
            "import",
            str(folder / "compose.yaml"),
            "--dry-run",
            *args,
        ],
        env={**base, **env, "LLM_DYNO_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _project(tmp_path: Path, compose: str = COMPOSE) -> tuple[Path, Path]:
    folder = tmp_path / "proj"
    (folder / "base").mkdir(parents=True)
    (folder / "base" / "common.yml").write_text(COMMON)
    (folder / "compose.yaml").write_text(compose)
    return folder, folder / "base" / "common.yml"


def test_an_error_in_a_key_from_the_other_file_names_that_file_and_line(tmp_path: Path) -> None:
    folder, common = _project(tmp_path)
    done = _import(folder, tmp_path / "home", NEEDED_HERE="x")
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert f"error: {common}:7, field 'services.base.environment.FROM_BASE': " in done.stderr, done.stderr
    assert "set it for the base" in done.stderr


def test_a_warning_about_a_key_from_the_other_file_names_that_file_and_line(tmp_path: Path) -> None:
    folder, common = _project(tmp_path)
    done = _import(folder, tmp_path / "home", NEEDED_HERE="x", NEEDED_IN_BASE="y")
    assert done.returncode == 0, done.stderr
    assert f"warning: {common}:8, field 'services.base.stdin_open': not kept by LLM Dyno" in done.stderr
    assert f"{folder / 'compose.yaml'}:" not in done.stderr.split("stdin_open")[0].rsplit("\n", 1)[-1]


def test_a_key_the_extending_file_writes_is_reported_in_that_file(tmp_path: Path) -> None:
    folder, _ = _project(tmp_path)
    done = _import(folder, tmp_path / "home", NEEDED_IN_BASE="y")
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert f"error: {folder / 'compose.yaml'}:8, field 'services.vllm.environment.OWN': " in done.stderr


def test_a_key_from_a_service_of_the_same_file_is_reported_at_that_service(tmp_path: Path) -> None:
    folder, _ = _project(
        tmp_path,
        "services:\n  base:\n    image: vllm/vllm-openai:v0.11.0\n    ports: ['8000:8000']\n"
        "    tty: true\n  vllm:\n    extends: base\n    command: m --port 8000\n",
    )
    done = _import(folder, tmp_path / "home", "--service", "vllm")
    assert done.returncode == 0, done.stderr
    # its tty came from `base`, written on line 5
    assert f"warning: {folder / 'compose.yaml'}:5, field 'services.base.tty': not kept" in done.stderr
