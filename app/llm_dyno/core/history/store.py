"""SQLite store of benchmark results: the full JSON of each, plus indexed columns to list and filter."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.schema import HistoryError, migrate
from llm_dyno.core.paths import data_dir


def default_path() -> Path:
    """``data_dir()/history.db``."""
    return data_dir() / "history.db"


@dataclass(frozen=True)
class HistoryEntry:
    """One stored result's indexed columns (what a list shows)."""

    id: int
    started: str
    profile: str | None
    model: str | None
    suite: str
    narr_wall_tps: float | None
    code_wall_tps: float | None
    tags: tuple[str, ...]
    note: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "id": self.id,
            "started": self.started,
            "profile": self.profile,
            "model": self.model,
            "suite": self.suite,
            "narr_wall_tps": self.narr_wall_tps,
            "code_wall_tps": self.code_wall_tps,
            "tags": list(self.tags),
            "note": self.note,
        }


@dataclass(frozen=True)
class StoredResult:
    """An entry and its full result."""

    entry: HistoryEntry
    result: BenchResult


def _mean_wall_tps(result: BenchResult, name: str) -> float | None:
    prompt = result.prompt(name)
    summary = prompt.summary("wall_tps") if prompt else None
    return summary.mean if summary else None


def _columns(result: BenchResult) -> tuple[Any, ...]:
    ctx = result.context
    profile = ctx.get("profile_name") or (ctx.get("profile") or {}).get("name")
    return (
        str(ctx.get("started") or ""),
        profile,
        ctx.get("model"),
        result.suite,
        _mean_wall_tps(result, "narrative"),
        _mean_wall_tps(result, "code"),
        result.to_json(),
    )


class HistoryStore:
    """The history database (created and migrated on open). Use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            migrate(self._conn, self.path)
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open history database {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, result: BenchResult, *, tags: tuple[str, ...] = (), note: str = "") -> int:
        """Store a result; returns its id."""
        with self._tx():
            cur = self._conn.execute(
                "INSERT INTO results (started, profile, model, suite, narr_wall_tps, code_wall_tps, json,"
                " note) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*_columns(result), note),
            )
            rid = int(cur.lastrowid or 0)
            for tag in tags:
                self._conn.execute("INSERT OR IGNORE INTO result_tags VALUES (?, ?)", (rid, tag))
        return rid

    def replace(self, result_id: int, result: BenchResult) -> None:
        """Store a newer state of a result kept under ``result_id`` (a benchmark saves run by run);
        its tags and note stay."""
        self._require(result_id)
        with self._tx():
            self._conn.execute(
                "UPDATE results SET started = ?, profile = ?, model = ?, suite = ?, narr_wall_tps = ?,"
                " code_wall_tps = ?, json = ? WHERE id = ?",
                (*_columns(result), result_id),
            )

    def check_writable(self) -> None:
        """Fail now (:class:`HistoryError`) when results could not be stored: before a benchmark's
        first request rather than after its last run."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")  # takes the write lock, as an INSERT would
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot write to the history database {self.path}: {exc}") from exc

    def _tx(self) -> _Transaction:
        return _Transaction(self._conn)

    def list(
        self,
        *,
        profile: str | None = None,
        suite: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
    ) -> list[HistoryEntry]:
        """Entries, newest first, filtered by profile, suite and tag when given."""
        sql = "SELECT id, started, profile, model, suite, narr_wall_tps, code_wall_tps, note FROM results"
        where: list[str] = []
        params: list[Any] = []
        if profile is not None:
            where.append("profile = ?")
            params.append(profile)
        if suite is not None:
            where.append("suite = ?")
            params.append(suite)
        if tag is not None:
            where.append("id IN (SELECT result_id FROM result_tags WHERE tag = ?)")
            params.append(tag)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY started DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._conn.execute(sql, params).fetchall()
        return [self._entry(row) for row in rows]

    def _entry(self, row: tuple[Any, ...]) -> HistoryEntry:
        tags = tuple(
            t
            for (t,) in self._conn.execute(
                "SELECT tag FROM result_tags WHERE result_id = ? ORDER BY tag", (row[0],)
            )
        )
        return HistoryEntry(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6], tags, row[7])

    def get(self, result_id: int) -> StoredResult:
        """One result; :class:`HistoryError` if there is none with that id."""
        row = self._conn.execute(
            "SELECT id, started, profile, model, suite, narr_wall_tps, code_wall_tps, note, json FROM results"
            " WHERE id = ?",
            (result_id,),
        ).fetchone()
        if row is None:
            raise HistoryError(f"no result with id {result_id}", hint="`llm-dyno history list` shows the ids")
        return StoredResult(self._entry(row[:8]), BenchResult.from_dict(json.loads(row[8])))

    def _require(self, result_id: int) -> None:
        if self._conn.execute("SELECT 1 FROM results WHERE id = ?", (result_id,)).fetchone() is None:
            raise HistoryError(f"no result with id {result_id}", hint="`llm-dyno history list` shows the ids")

    def tag(self, result_id: int, tag: str) -> None:
        """Add a tag (idempotent)."""
        self._require(result_id)
        if not tag.strip():
            raise HistoryError("a tag cannot be empty")
        with self._tx():
            self._conn.execute("INSERT OR IGNORE INTO result_tags VALUES (?, ?)", (result_id, tag.strip()))

    def untag(self, result_id: int, tag: str) -> None:
        """Remove a tag."""
        self._require(result_id)
        with self._tx():
            self._conn.execute("DELETE FROM result_tags WHERE result_id = ? AND tag = ?", (result_id, tag))

    def note(self, result_id: int, text: str) -> None:
        """Replace the note."""
        self._require(result_id)
        with self._tx():
            self._conn.execute("UPDATE results SET note = ? WHERE id = ?", (text, result_id))

    def delete(self, result_id: int) -> None:
        """Delete a result and its tags."""
        self._require(result_id)
        with self._tx():
            self._conn.execute("DELETE FROM result_tags WHERE result_id = ?", (result_id,))
            self._conn.execute("DELETE FROM results WHERE id = ?", (result_id,))


class _Transaction:
    """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")
