"""Issue 28: `llm-dyno diagnose NAME --apply FINDING_ID` stores the copy the window's "Apply to a copy"
stores (same name rule, the original untouched), through the CLI in a child process, on the founding
profile with its founding log's capture sizes cut to 1 (the verify-batch finding carries the change)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
SIZES = "'cudagraph_capture_sizes': [1, 2, 4, 8], 'max_cudagraph_capture_size': 8"
NAME = "qwen36-27b-mtp"
FIX = "verify-batch-not-captured"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    done = cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml"))
    assert done.returncode == 0, done.stderr
    text = FOUNDING_LOG.read_text(encoding="utf-8")
    assert SIZES in text
    log = tmp_path / "one-size.log"
    log.write_text(text.replace(SIZES, "'cudagraph_capture_sizes': [1], 'max_cudagraph_capture_size': 1"))
    return tmp_path


def _diagnose(home: Path, *extra: str) -> object:
    return cli(home, "diagnose", NAME, "--reference", "recipe-3090-claimed",
               "--log", str(home / "one-size.log"), "--tps", "43", "54", *extra)  # fmt: skip


def _args(home: Path, name: str) -> list[str]:
    done = cli(home, "profile", "show", name)
    assert done.returncode == 0, done.stderr
    data = yaml.safe_load(done.stdout)
    return [str(a) for a in data.get("args", [])]


def test_the_text_names_the_command_for_each_applicable_finding(home: Path) -> None:
    done = _diagnose(home)
    assert done.returncode == 0, done.stderr
    assert f"apply {FIX} to a copy: this command with --apply {FIX}" in done.stdout


def test_apply_stores_a_copy_whose_args_carry_the_change_and_a_second_is_numbered(home: Path) -> None:
    before = _args(home, NAME)
    done = _diagnose(home, "--apply", FIX)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("created profile ") and "fix" in first
    assert "change: " in done.stdout and "compilation-config" in done.stdout
    copy = first.split("'")[1]
    args = _args(home, copy)
    joined = " ".join(args)
    assert "compilation-config" in joined and '"cudagraph_capture_sizes":[1,4]' in joined
    assert _args(home, NAME) == before  # the original is never touched
    again = _diagnose(home, "--apply", FIX)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].split("'")[1] == f"{copy} 2"


def test_an_unknown_finding_exits_2_naming_those_with_a_change(home: Path) -> None:
    done = _diagnose(home, "--apply", "no-such-finding")
    assert done.returncode == 2
    assert "'no-such-finding' is not among the findings" in done.stderr
    assert "findings with a change: " in done.stderr and FIX in done.stderr


def test_a_finding_without_a_change_exits_2(home: Path) -> None:
    import json

    done = _diagnose(home, "--json")
    assert done.returncode == 0, done.stderr
    plain = [f["id"] for f in json.loads(done.stdout)["findings"] if not f["changes"]]
    assert plain, "the founding case has findings that are advice only"
    refused = _diagnose(home, "--apply", plain[0])
    assert refused.returncode == 2
    assert f"{plain[0]!r} has no change that can be applied" in refused.stderr and FIX in refused.stderr
