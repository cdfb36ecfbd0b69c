"""Hostile and damaged files through the real CLI in a subprocess: YAML bombs in profiles, settings
and suites, a damaged history database, a history row of bad JSON, a full disk. Each gives a clear
message naming the file (and line), loses nothing, and costs bounded memory and time."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.history.store import HistoryStore
from tests.support.hostile_server import HostileServer
from tests.test_hostile_servers import PEAK_RSS_LIMIT_MB, llm_dyno

SHIPPED = Path(__file__).resolve().parents[1] / "profiles" / "cpu-demo.yaml"

# the hostile YAML of the issue: each a profile file of its own
RECURSIVE_ALIAS = "name: loop\nnotes: &n [*n]\n"
DEEP = "name: deep\nnotes: " + "[" * 5000 + "]" * 5000 + "\n"
# "billion laughs": nine levels of nine aliases each, 9^9 values from a few hundred bytes
BOMB = "name: bomb\na: &a [l,l,l,l,l,l,l,l,l]\n" + "".join(
    f"{k}: &{k} [{','.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefg", "bcdefgh", strict=True)
)
LONG_LINE = "name: long\nnotes: " + "z" * 2_000_000 + "\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config" / "profiles").mkdir(parents=True)
    shutil.copy(SHIPPED, tmp_path / "config" / "profiles" / "cpu-demo.yaml")
    return tmp_path


def test_the_bomb_is_small() -> None:
    # what makes it a bomb: a few hundred bytes that expand to 9^9 values
    assert len(BOMB) < 320 and BOMB.count("*") == 63


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (RECURSIVE_ALIAS, 2, "refused: an alias that contains itself (a recursive alias)"),
        (DEEP, 2, "refused: nesting deeper than 64 levels"),
        (BOMB, 7, "refused: aliases that expand to more than 100,000 values (an alias bomb?)"),
        (LONG_LINE, 2, "refused: a line longer than 65,536 characters"),
    ],
    # short ids: the test's id travels in PYTEST_CURRENT_TEST to every child (a 2 MB one is too long for exec)
    ids=["recursive-alias", "deep", "bomb", "long-line"],
)
def test_a_hostile_profile_is_named_and_the_others_still_load(
    text: str, line: int, message: str, home: Path
) -> None:
    bad = home / "config" / "profiles" / "bad.yaml"
    bad.write_text(text)
    ran = llm_dyno(["profile", "list"], home)
    assert ran.code == 0, ran.err
    assert ran.out.startswith("cpu-demo  process")
    assert f"warning: {bad}:{line}: {message}" in ran.err
    assert ran.peak_mb < PEAK_RSS_LIMIT_MB and ran.seconds < 15, (ran.peak_mb, ran.seconds)
    assert bad.read_text() == text  # nothing rewritten


def test_a_hostile_settings_file_is_named_and_commands_still_run(home: Path) -> None:
    settings = home / "config" / "settings.yaml"
    settings.write_text(BOMB.replace("name: bomb\n", ""))
    ran = llm_dyno(["profile", "list"], home)
    assert ran.code == 0 and "cpu-demo" in ran.out
    assert f"warning: {settings}:6: refused: aliases that expand to more than 100,000 values" in ran.err
    assert "(settings ignored)" in ran.err


def test_a_hostile_suite_is_refused_with_its_line(home: Path) -> None:
    suite = home / "bomb.yaml"
    suite.write_text("name: s\nprompts:\n  - &p [*p]\n")
    ran = llm_dyno(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--suite", str(suite)], home)
    assert ran.code == 2
    assert f"error: {suite}:3: refused: an alias that contains itself (a recursive alias)" in ran.err


def _history(home: Path, n: int = 3) -> Path:
    with HistoryStore(home / "data" / "history.db") as store:
        for i in range(n):
            store.add(BenchResult("quick", RunContext(started=f"2026-01-{i + 1:02d}", model="m" * 3000)))
        return store.path


def test_a_damaged_history_database_is_named_and_kept(home: Path) -> None:
    db = _history(home, 30)
    with open(db, "r+b") as fh:  # overwrite the b-tree pages after the header page
        for page in (1, 2, 3):
            fh.seek(4096 * page)
            fh.write(b"\xde\xad" * 2048)
    ran = llm_dyno(["history", "list"], home)
    assert ran.code == 2 and "Traceback" not in ran.err
    copies = sorted(p for p in db.parent.glob("history.db.damaged-*") if not p.name.endswith("-wal"))
    assert len(copies) == 1
    assert f"error: the history database {db} is damaged (database disk image is malformed); " in ran.err
    assert f"a copy was kept at {copies[0]}" in ran.err
    again = llm_dyno(["history", "list"], home)  # the same damage is not copied twice
    assert again.code == 2 and len([p for p in db.parent.glob("history.db.damaged-*")]) == len(
        list(db.parent.glob("history.db.damaged-*"))
    )
    assert sorted(p for p in db.parent.glob("history.db.damaged-*") if not p.name.endswith("-wal")) == copies


def test_a_history_row_of_bad_json_is_named_and_the_others_still_show(home: Path) -> None:
    db = _history(home)
    with sqlite3.connect(db) as conn:
        conn.execute('UPDATE results SET json = \'{"suite": "quick", "prom\' WHERE id = 2')
    listed = llm_dyno(["history", "list"], home)
    assert listed.code == 0 and all(f"#{i} " in listed.out for i in (1, 2, 3))
    for args in (["history", "show", "2"], ["history", "compare", "1", "2"]):
        ran = llm_dyno(args, home)
        assert ran.code == 2 and "Traceback" not in ran.err
        assert f"error: result #2 in {db} is damaged: its stored JSON does not read" in ran.err
        assert "`llm-dyno history delete 2` removes it" in ran.err
    assert llm_dyno(["history", "show", "3"], home).code == 0


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs, nearly full (root only: mount)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)  # lazy: a failed test may hold a file


def _fill(folder: Path) -> None:
    fh = open(folder / "filler", "wb", buffering=0)  # noqa: SIM115 (closed below, whatever happens)
    try:
        while True:
            fh.write(b"\0" * 4096)
    except OSError:
        pass
    finally:
        fh.close()


def test_a_full_disk_says_so_with_the_file(full_disk: Path, tmp_path: Path) -> None:
    (full_disk / "config" / "profiles").mkdir(parents=True)
    _fill(full_disk)
    ran = llm_dyno(["profile", "import", str(SHIPPED)], tmp_path, home_env=full_disk)
    assert ran.code == 2
    folder = full_disk / "config" / "profiles"
    assert f"no space left on the device of {folder} while writing cpu-demo.yaml" in ran.err
    assert "disk I/O error" not in ran.err
    assert not list(folder.iterdir())  # no half-written file left behind


def test_a_full_disk_while_storing_a_benchmark(full_disk: Path, tmp_path: Path) -> None:
    db = _history(full_disk, 1)
    _fill(full_disk)
    with HostileServer("models_list", good_posts=99, lifetime_s=40) as server:
        ran = llm_dyno(
            [
                "bench",
                "--url",
                server.url,
                "--model",
                "tiny",
                "--suite",
                "quick",
                "--runs",
                "1",
                "--warmups",
                "0",
            ],
            tmp_path,
            home_env=full_disk,
        )
    assert ran.code == 2, ran.err
    # WAL mode opens (creates) its journal before the first write: the open is what fails here
    assert re.search(
        rf"no space left on the device of {re.escape(str(db.parent))} while (opening|writing) history.db",
        ran.err,
    )
    # the store is opened and checked before the first request: nothing was run for nothing
    assert "narr " not in ran.out and server.posts == 0
    (full_disk / "filler").unlink()
    with HistoryStore(db) as store:  # what was stored before is intact
        assert len(store.list()) == 1
