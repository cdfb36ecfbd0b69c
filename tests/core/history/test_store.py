"""History store: add / list / filter / tag / note / delete / compare, and migrations from v1."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.history.compare import compare_many, render_text
from llm_dyno.core.history.schema import SCHEMA_VERSION, HistoryError, backup_path
from llm_dyno.core.history.store import HistoryStore


def result(
    narr: list[float],
    code: list[float],
    started: str = "2026-01-01T00:00:00+00:00",
    profile: dict[str, object] | None = None,
    suite: str = "community",
) -> BenchResult:
    prompts = [
        PromptResult(n, [BenchRun(n, i, False, 0.1, 1.0, int(v), v, v, "length") for i, v in enumerate(vals)])
        for n, vals in (("narrative", narr), ("code", code))
    ]
    ctx = RunContext(
        started=started,
        model="tiny",
        profile=profile,
        profile_name=str(profile["name"]) if profile else None,
    )
    return BenchResult(suite, ctx, prompts)


def test_add_list_filter_tag_note_delete(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "history.db") as h:
        a = h.add(result([40, 41], [50, 51]), tags=("baseline",))
        b = h.add(
            result(
                [45, 46], [55, 56], started="2026-01-02T00:00:00+00:00", profile={"name": "p2", "model": "m"}
            ),
            note="kv fp8",
        )
        assert [e.id for e in h.list()] == [b, a]
        assert h.list()[1].narr_wall_tps == pytest.approx(40.5) and h.list()[0].profile == "p2"
        assert [e.id for e in h.list(tag="baseline")] == [a]
        assert [e.id for e in h.list(profile="p2")] == [b]
        assert h.list(suite="quick") == []
        h.tag(b, "fp8")
        h.tag(b, "fp8")
        h.note(a, "first")
        stored = h.get(a)
        assert stored.entry.note == "first" and stored.result.prompts[0].values("wall_tps") == [40, 41]
        assert h.get(b).entry.tags == ("fp8",)
        h.delete(a)
        with pytest.raises(HistoryError, match="no result with id"):
            h.get(a)
        with pytest.raises(HistoryError):
            h.tag(a, "x")
    assert sqlite3.connect(tmp_path / "history.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_compare_with_profile_diff() -> None:
    pa = {"schema": 1, "name": "a", "model": "m", "runtime": "process", "args": ["--max-model-len", "2048"]}
    pb = {"schema": 1, "name": "b", "model": "m", "runtime": "process", "args": ["--max-model-len", "4096"]}
    comps = compare_many(
        [
            (1, result([40, 41, 40.5], [50, 51, 50.5], profile=pa)),
            (2, result([45, 46, 45.5], [50, 51.2, 50.4], profile=pb)),
        ]
    )
    rows = {(p, c.metric): c.verdict.value for p, c in comps[0].rows}
    assert rows[("narrative", "wall_tps")] == "better" and rows[("code", "wall_tps")] == "within noise"
    assert comps[0].profile_diff and any("max-model-len" in str(r) for r in comps[0].profile_diff)
    assert "better" in render_text(comps)


def make_v1(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT NOT NULL, profile TEXT,
            model TEXT, suite TEXT NOT NULL, narr_wall_tps REAL, code_wall_tps REAL, json TEXT NOT NULL);
        CREATE INDEX results_started ON results(started);
        PRAGMA user_version = 1;
        """
    )
    conn.execute(
        "INSERT INTO results (started, profile, model, suite, narr_wall_tps, code_wall_tps, json)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        ("2025-12-01T00:00:00+00:00", "old", "m", "community", 43.0, 54.0, result([43], [54]).to_json()),
    )
    conn.commit()
    conn.close()


def test_migrate_v1_backs_up_then_keeps_data(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    make_v1(db)
    with HistoryStore(db) as h:
        entries = h.list()
        assert len(entries) == 1 and entries[0].profile == "old" and entries[0].note == ""
        h.tag(entries[0].id, "migrated")
        assert h.list(tag="migrated")
    bak = backup_path(db, 1)
    assert bak.name == "history.db.bak-v1" and bak.exists()
    old = sqlite3.connect(bak)
    assert old.execute("PRAGMA user_version").fetchone()[0] == 1
    assert old.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_failed_migration_step_rolls_back(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    make_v1(db)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE result_tags (x INTEGER)")  # makes step 2 fail half-way
    conn.commit()
    conn.close()
    with pytest.raises(HistoryError, match="to v2 failed"):
        HistoryStore(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    cols = [r[1] for r in conn.execute("PRAGMA table_info(results)")]
    assert "note" not in cols  # the ALTER before the failing statement was rolled back too


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    sqlite3.connect(db).execute("PRAGMA user_version = 99")
    with pytest.raises(HistoryError, match="newer"):
        HistoryStore(db)
