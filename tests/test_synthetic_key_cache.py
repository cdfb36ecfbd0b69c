"""The synthetic-acceptance key check remembers each install's answer in the cache folder, so a second
`diagnose` does not import vllm.config again (5-12 s here); a reinstall (its console script rewritten)
is asked again, and a damaged cache file is asked again too."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.support.cli import cli
from tests.support.fake_vllm_config import fake_vllm

PROFILE = """\
schema: 1
name: local-mtp
runtime: process
process:
  executable: {exe}
model: /models/none
args:
- --speculative-config
- '{{"method":"mtp","num_speculative_tokens":3}}'
"""
FIELDS = ("method", "num_speculative_tokens", "rejection_sample_method", "synthetic_acceptance_rate")
ENV = {**os.environ, "LLM_DYNO_VLLM_ASK_DEADLINE_S": "3"}


def _finding(home: Path) -> dict[str, Any]:
    done = cli(home, "diagnose", "local-mtp", "--reference", "recipe-3090-claimed", "--tps", "43", "54",
               "--json", env=ENV, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    found: dict[str, Any] = next(f for f in data["findings"] if f["id"] == "synthetic-acceptance-ab")
    return found


def _hang_on_import(venv: Path) -> None:
    """The install's vllm.config now takes 600 s to import: only a kept answer can still be quick."""
    config = venv / "site" / "vllm" / "config" / "__init__.py"
    config.write_text("import time\ntime.sleep(600)\n")


def test_a_second_diagnose_uses_the_kept_answer_and_a_reinstall_is_asked_again(tmp_path: Path) -> None:
    exe = fake_vllm(tmp_path / "venv", FIELDS)
    (tmp_path / "p.yaml").write_text(PROFILE.format(exe=exe))
    assert cli(tmp_path, "profile", "import", str(tmp_path / "p.yaml")).returncode == 0
    first = _finding(tmp_path)
    assert len(first["changes"]) == 1, first

    _hang_on_import(tmp_path / "venv")
    second = _finding(tmp_path)  # asked again it would give up after 3 s with no change
    assert second["changes"] == first["changes"]
    assert second["evidence"] == first["evidence"]

    exe.write_text(exe.read_text() + "# reinstalled\n")  # a reinstall rewrites the console script
    third = _finding(tmp_path)
    assert third["changes"] == []
    assert "did not list its SpeculativeConfig within 3 s" in " ".join(third["evidence"])


def test_a_damaged_cache_file_is_asked_again(tmp_path: Path) -> None:
    exe = fake_vllm(tmp_path / "venv", FIELDS)
    (tmp_path / "p.yaml").write_text(PROFILE.format(exe=exe))
    assert cli(tmp_path, "profile", "import", str(tmp_path / "p.yaml")).returncode == 0
    assert len(_finding(tmp_path)["changes"]) == 1
    kept = list(tmp_path.rglob("synthetic-keys.json"))
    assert len(kept) == 1, kept
    kept[0].write_text("[" * 50_000)  # deep JSON: refused, not a crash
    assert len(_finding(tmp_path)["changes"]) == 1  # asked again: the install still answers
    assert json.loads(kept[0].read_text())  # and the file is whole again
