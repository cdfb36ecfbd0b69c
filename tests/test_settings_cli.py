"""The settings file through the CLI: a bad one is named (file, line, field) and the defaults hold; a
good one takes effect (the data folder, the default Docker host), without travelling through the
environment of what the app starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "DOCKER_CONTEXT", "LLM_DYNO_DATA")}
    env |= {"LLM_DYNO_HOME": str(home), "DOCKER_CONFIG": str(home / "no-docker-config"), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args], env=env, capture_output=True, text=True, timeout=120
    )


def _settings(home: Path, text: str) -> Path:
    path = home / "config" / "settings.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_bad_settings_file_is_named_and_the_defaults_hold(tmp_path: Path) -> None:
    path = _settings(tmp_path, f"data_dir: {tmp_path / 'elsewhere'}\nsample_interval_s: 0.01\n")
    done = _cli(tmp_path, "history", "list")
    assert done.returncode == 0, done.stderr
    where = f"warning: {path}:2, field 'sample_interval_s'"
    assert f"{where}: sample_interval_s 0.01 is out of range" in done.stderr
    assert "choose between 0.1 and 60.0 seconds" in done.stderr and "(settings ignored)" in done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "data" / "history.db").is_file()  # the default data folder, not the file's
    assert not (tmp_path / "elsewhere").exists()
    _settings(tmp_path, "theme: dark\ncolour: red\n")
    done = _cli(tmp_path, "history", "list")
    assert f"warning: {path}:2, field 'colour': unknown setting 'colour'" in done.stderr
    assert "known settings: data_dir, docker_host, sample_interval_s, theme" in done.stderr


def test_a_good_settings_file_takes_effect(tmp_path: Path) -> None:
    _settings(tmp_path, f"data_dir: {tmp_path / 'elsewhere'}\ndocker_host: no-such-context\n")
    done = _cli(tmp_path, "history", "list")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert (tmp_path / "elsewhere" / "history.db").is_file()  # the history follows the data folder
    assert not (tmp_path / "data").exists()
    done = _cli(tmp_path, "doctor")
    assert "[warn] Docker engine: cannot reach no-such-context" in done.stdout, done.stdout
