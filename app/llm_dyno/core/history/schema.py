"""The history database's schema and its migrations.

``PRAGMA user_version`` holds the schema version. Before migrating an existing database the file is
copied (SQLite's backup API, which is safe with WAL) to ``history.db.bak-v<N>``, N being the version it
had; each step then runs in one transaction together with its ``user_version`` bump, so a failed step
leaves the database at the previous version.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from llm_dyno.core.errors import DynoError

# Step N brings a database from version N-1 to N.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE results (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started TEXT NOT NULL,
            profile TEXT,
            model TEXT,
            suite TEXT NOT NULL,
            narr_wall_tps REAL,
            code_wall_tps REAL,
            json TEXT NOT NULL
        )""",
        "CREATE INDEX results_started ON results(started)",
    ),
    2: (
        "ALTER TABLE results ADD COLUMN note TEXT NOT NULL DEFAULT ''",
        """CREATE TABLE result_tags (
            result_id INTEGER NOT NULL REFERENCES results(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (result_id, tag)
        )""",
        "CREATE INDEX result_tags_tag ON result_tags(tag)",
        "CREATE INDEX results_profile ON results(profile)",
        "CREATE INDEX results_suite ON results(suite)",
    ),
    # a row is a benchmark ("bench": BenchResult JSON) or a load run ("load": LoadResult JSON)
    3: ("ALTER TABLE results ADD COLUMN kind TEXT NOT NULL DEFAULT 'bench'",),
}
SCHEMA_VERSION = max(MIGRATIONS)


class HistoryError(DynoError):
    """The history database cannot be opened, migrated or queried."""


def user_version(conn: sqlite3.Connection) -> int:
    """The schema version stored in the database (0 for a new file)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def backup_path(db_path: Path, version: int) -> Path:
    """Where the copy taken before migrating from ``version`` goes."""
    return db_path.with_name(f"{db_path.name}.bak-v{version}")


def migrate(conn: sqlite3.Connection, db_path: Path | None) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version it had before.

    ``conn`` must be in autocommit mode (``isolation_level=None``) so the steps control their transactions.
    """
    start = user_version(conn)
    if start > SCHEMA_VERSION:
        raise HistoryError(
            f"history database is schema v{start}, newer than this app understands (v{SCHEMA_VERSION})",
            hint="update LLM Dyno, or move the file away to start a new history",
        )
    if start == SCHEMA_VERSION:
        return start
    if start > 0 and db_path is not None:
        target = sqlite3.connect(backup_path(db_path, start))
        try:
            conn.backup(target)
        finally:
            target.close()
    for version in range(start + 1, SCHEMA_VERSION + 1):
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            # user_version is part of the transaction: it moves only if every statement succeeded
            conn.execute(f"PRAGMA user_version = {version:d}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise HistoryError(
                f"migrating the history database to v{version} failed: {exc}",
                hint=f"the copy taken before migrating is {backup_path(db_path, start)}" if db_path else None,
            ) from exc
    return start
