"""The profile index through the CLI in a subprocess: it is never trusted blindly. A file edited by hand
(even to the same size), renamed inside, deleted or added shows as it is now; a damaged index is rebuilt
without a word; two imports at once both land; a broken file is reported on every run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_dyno.core.profiles.index import DATA_NAME, INDEX_NAME
from tests.support.cli import cli

HOUR_NS = 3600 * 1_000_000_000


def _profile_text(name: str, model: str, port: int) -> str:
    return (
        f"schema: 1\nname: {name}\nruntime: process\nprocess:\n  executable: vllm\nmodel: {model}\n"
        f"args:\n- --port\n- '{port}'\n"
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Three hand-written profiles whose files were last changed an hour ago, listed once (indexed)."""
    home = tmp_path / "home"
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True)
    old = time.time_ns() - HOUR_NS
    for i, name in enumerate(("alpha", "beta", "gamma")):
        path = folder / f"{name}.yaml"
        path.write_text(_profile_text(name, f"org/model-{name}", 8000 + i))
        os.utime(path, ns=(old, old))
    assert cli(home, "profile", "list").returncode == 0
    assert (folder / INDEX_NAME).is_file()
    return home


def _listed(home: Path) -> dict[str, dict[str, object]]:
    done = cli(home, "profile", "list", "--json")
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)}


def _shown(home: Path, name: str) -> subprocess.CompletedProcess[str]:
    return cli(home, "profile", "show", name, "--json")


def test_a_hand_edit_shows_in_list_and_show(home: Path) -> None:
    path = home / "config" / "profiles" / "beta.yaml"
    before = path.read_text()
    after = before.replace("org/model-beta", "org/model-BETA").replace("'8001'", "'9001'")
    assert len(after) == len(before)  # the same size: only the time says it changed
    path.write_text(after)  # in place: the same inode
    old = time.time_ns() - 2 * HOUR_NS  # and a time in the past, as `cp -p` or `touch -d` leave it
    os.utime(path, ns=(old, old))
    rows = _listed(home)
    assert rows["beta"]["model"] == "org/model-BETA" and rows["beta"]["port"] == 9001
    shown = _shown(home, "beta")
    assert shown.returncode == 0 and json.loads(shown.stdout)["model"] == "org/model-BETA"
    assert rows["alpha"]["model"] == "org/model-alpha"  # the others as they were


def test_a_name_changed_inside_a_file_moves_the_profile(home: Path) -> None:
    path = home / "config" / "profiles" / "gamma.yaml"
    path.write_text(path.read_text().replace("name: gamma", "name: delta"))
    assert "gamma" not in _listed(home) and "delta" in _listed(home)
    assert _shown(home, "gamma").returncode != 0
    assert json.loads(_shown(home, "delta").stdout)["model"] == "org/model-gamma"


def test_a_deleted_file_is_gone_and_a_new_one_is_there(home: Path) -> None:
    folder = home / "config" / "profiles"
    (folder / "alpha.yaml").unlink()
    (folder / "omega.yaml").write_text(_profile_text("omega", "org/model-omega", 8100))
    rows = _listed(home)
    assert set(rows) == {"beta", "gamma", "omega"}
    gone = _shown(home, "alpha")
    assert gone.returncode != 0 and "no profile named 'alpha'" in gone.stderr
    index = json.loads((folder / INDEX_NAME).read_text())
    assert sorted(e["file"] for e in index["entries"]) == ["beta.yaml", "gamma.yaml", "omega.yaml"]


@pytest.mark.parametrize("damage", ["", "{not json", '{"format": 1, "entries": [{"file": 3}]}', "[]"])
def test_a_damaged_index_is_rebuilt_without_an_error(home: Path, damage: str) -> None:
    folder = home / "config" / "profiles"
    (folder / INDEX_NAME).write_text(damage)
    (folder / DATA_NAME).write_text(damage)
    done = cli(home, "profile", "list", "--json")
    assert done.returncode == 0 and done.stderr == ""
    assert {r["name"] for r in json.loads(done.stdout)} == {"alpha", "beta", "gamma"}
    shown = _shown(home, "beta")
    assert shown.returncode == 0 and shown.stderr == "" and json.loads(shown.stdout)["name"] == "beta"
    assert len(json.loads((folder / INDEX_NAME).read_text())["entries"]) == 3


def test_an_index_that_lies_is_not_believed(home: Path) -> None:
    """An entry whose stamp no longer matches its file (here: a forged name and model) is read again."""
    folder = home / "config" / "profiles"
    index = json.loads((folder / INDEX_NAME).read_text())
    for entry in index["entries"]:
        entry["name"], entry["model"], entry["mtime_ns"] = "forged", "forged/model", entry["mtime_ns"] + 1
    (folder / INDEX_NAME).write_text(json.dumps(index))
    rows = _listed(home)
    assert set(rows) == {"alpha", "beta", "gamma"} and rows["alpha"]["model"] == "org/model-alpha"


def test_two_imports_at_once_both_land(home: Path, tmp_path: Path) -> None:
    line = tmp_path / "serve.sh"
    line.write_text("vllm serve org/imported --port 8200\n")
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "llm_dyno", "profile", "import", str(line), "--name", name],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    rows = _listed(home)
    assert {"first", "second", "alpha", "beta", "gamma"} == set(rows)
    assert rows["first"]["model"] == rows["second"]["model"] == "org/imported"
    assert json.loads(_shown(home, "second").stdout)["name"] == "second"


def test_a_broken_file_is_reported_on_every_run(home: Path) -> None:
    (home / "config" / "profiles" / "broken.yaml").write_text("schema: 1\nname: [unclosed\n")
    for _ in range(2):
        done = cli(home, "profile", "list")
        assert done.returncode == 0 and "broken.yaml" in done.stderr
        assert "alpha" in done.stdout
