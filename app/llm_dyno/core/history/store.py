"""SQLite store of benchmark results: the full JSON of each, plus indexed columns to list and filter."""

from __future__ import annotations

import datetime as dt
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_dyno.core.atomic import link_refused
from llm_dyno.core.bench.load import LoadResult
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.schema import SCHEMA_VERSION, HistoryError, migrate, user_version
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.paths import data_dir
from llm_dyno.core.records import Record
from llm_dyno.core.secrets import strip_credentials

BUSY_TIMEOUT_S = 5.0  # how long a statement waits for another process's lock before it is refused
# what SQLite says when the file or its folder cannot be written (a read-only mount, a locked-down folder)
_CANNOT_WRITE = ("readonly", "read-only", "unable to open database file", "attempt to write")


def default_path() -> Path:
    """``data_dir()/history.db``."""
    return data_dir() / "history.db"


class HistoryEntry(Record):
    """One stored result's indexed columns (what a list shows; ``model_dump``: ``history list --json``)."""

    id: int
    started: str
    profile: str | None
    model: str | None
    suite: str
    narr_wall_tps: float | None
    code_wall_tps: float | None
    tags: tuple[str, ...]
    note: str
    kind: str = "bench"  # "load": a load run (get_load reads it)


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
    return (
        ctx.started or "",
        ctx.profile_label,
        ctx.model,
        result.suite,
        _mean_wall_tps(result, "narrative"),
        _mean_wall_tps(result, "code"),
        strip_credentials(result.to_json()),  # a URL's user:password is never stored
    )


def _load_columns(result: LoadResult) -> tuple[Any, ...]:
    return (
        result.started,
        result.profile,
        result.model,
        result.suite,
        None,
        None,
        strip_credentials(result.to_json()),  # a URL's user:password is never stored
    )


class HistoryStore:
    """The history database (created and migrated on open). Use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self._copied: Path | None = None
        if path is None and self.path.is_symlink():  # the app's own file: never written through a link
            raise HistoryError(str(link_refused(self.path).strerror))
        self.read_only: str | None = None  # why it was opened for reading only (None: read-write)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                f"cannot create the folder of the history database {self.path}: {exc.strerror}",
                hint="point LLM_DYNO_HOME (or the Data folder setting) at a folder that can be written",
            ) from None
        with self._guard("opening"):
            try:
                self._conn = self._open_read_write()
            except sqlite3.OperationalError as exc:
                if not self.path.is_file() or not any(m in str(exc) for m in _CANNOT_WRITE):
                    raise
                self._conn = self._open_read_only(str(exc))

    def _open_read_write(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            migrate(conn, self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_read_only(self, why: str) -> sqlite3.Connection:
        """The file opened for reading only, when it (or its folder) cannot be written: what it holds can
        still be listed and shown. A WAL database whose folder is read-only opens as immutable."""
        self.read_only = why
        last: sqlite3.Error | None = None
        for mode in ("mode=ro", "immutable=1"):
            conn = sqlite3.connect(
                f"{self.path.absolute().as_uri()}?{mode}",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                version = user_version(conn)
            except sqlite3.Error as exc:
                conn.close()
                last = exc
                continue
            if version != SCHEMA_VERSION:
                conn.close()
                raise HistoryError(
                    f"the history database {self.path} is schema v{version} and cannot be brought to "
                    f"v{SCHEMA_VERSION}: it cannot be written ({why})",
                    hint="make the file and its folder writable, or copy it somewhere writable",
                )
            return conn
        raise last or sqlite3.OperationalError("unable to open database file")

    def _writable(self) -> None:
        if self.read_only is not None:
            raise self._read_only_error(self.read_only)

    def _read_only_error(self, why: str) -> HistoryError:
        return HistoryError(
            f"the history database {self.path} cannot be written: it or its folder is read-only ({why}); "
            "what it holds can still be listed and shown",
            hint="make the data folder writable (or point LLM_DYNO_HOME elsewhere) to store results",
        )

    @contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """SQLite's errors as messages a user can act on: a full disk, a damaged file (a copy of it
        is kept before anything else touches it), a busy database."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._explain(exc, doing) from None

    def _explain(self, exc: sqlite3.Error, doing: str) -> HistoryError:
        text = str(exc)
        full = "full" in text or (
            "disk I/O error" in text and shutil.disk_usage(self.path.parent).free < 1024 * 1024
        )
        if full:
            return HistoryError(
                f"no space left on the device of {self.path.parent} while {doing} {self.path.name}",
                hint="free some space; the results stored so far are kept",
            )
        if "readonly" in text or "read-only" in text:
            return self._read_only_error(text)
        if "locked" in text or "busy" in text:
            return HistoryError(
                f"the history database {self.path} is busy ({text})",
                hint="another LLM Dyno may be writing to it; try again",
            )
        if "malformed" in text or "not a database" in text or "disk I/O error" in text:
            copy = self._keep_copy()
            kept = f"a copy was kept at {copy}" if copy else "no copy could be made"
            return HistoryError(
                f"the history database {self.path} is damaged ({text}); {kept}",
                hint=f"move {self.path.name} away to start a new history (sqlite3's .recover may save rows)",
            )
        return HistoryError(f"history database {self.path}: {text} (while {doing})")

    def _keep_copy(self) -> Path | None:
        """Copy the damaged file (and its WAL) once, before anything can write to it again."""
        if self._copied is None:
            self._copied = self._earlier_copy()
        if self._copied is None:
            stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            copy = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
            try:
                shutil.copy2(self.path, copy)
                wal = self.path.with_name(self.path.name + "-wal")
                if wal.exists():
                    shutil.copy2(wal, copy.with_name(copy.name + "-wal"))
            except OSError:
                return None
            self._copied = copy
        return self._copied

    def _earlier_copy(self) -> Path | None:
        """A copy kept by an earlier run of the same damaged file (same size and time): reused, so
        that every command run against the damage does not add one more."""
        try:
            st = self.path.stat()
            for old in self.path.parent.glob(f"{self.path.name}.damaged-*"):
                ost = old.stat()
                if not old.name.endswith("-wal") and (ost.st_size, ost.st_mtime_ns) == (
                    st.st_size,
                    st.st_mtime_ns,
                ):
                    return old
        except OSError:
            pass
        return None

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, result: BenchResult, *, tags: tuple[str, ...] = (), note: str = "") -> int:
        """Store a result; returns its id."""
        with self._guard("writing"), self._tx():
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
        with self._guard("writing"), self._tx():
            self._conn.execute(
                "UPDATE results SET started = ?, profile = ?, model = ?, suite = ?, narr_wall_tps = ?,"
                " code_wall_tps = ?, json = ? WHERE id = ?",
                (*_columns(result), result_id),
            )

    def check_writable(self) -> None:
        """Fail now (:class:`HistoryError`) when results could not be stored: before a benchmark's
        first request rather than after its last run."""
        self._writable()
        try:
            self._conn.execute("BEGIN IMMEDIATE")  # takes the write lock, as an INSERT would
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot write to the history database {self.path}: {exc}") from exc

    def _tx(self) -> _Transaction:
        self._writable()
        return _Transaction(self._conn)

    def list(
        self,
        *,
        profile: str | None = None,
        suite: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        kind: str | None = "bench",
    ) -> list[HistoryEntry]:
        """Entries, newest first, filtered by profile, suite and tag when given; benchmarks only unless
        ``kind`` says otherwise ("load": load runs, None: both)."""
        sql = (
            "SELECT id, started, profile, model, suite, narr_wall_tps, code_wall_tps, note, kind FROM results"
        )
        where: list[str] = []
        params: list[Any] = []
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
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
        with self._guard("reading"):
            rows = self._conn.execute(sql, params).fetchall()
            return [self._entry(row) for row in rows]

    def _entry(self, row: tuple[Any, ...]) -> HistoryEntry:
        tags = tuple(
            t
            for (t,) in self._conn.execute(
                "SELECT tag FROM result_tags WHERE result_id = ? ORDER BY tag", (row[0],)
            )
        )
        return HistoryEntry(
            id=int(row[0]), started=row[1], profile=row[2], model=row[3], suite=row[4], narr_wall_tps=row[5],
            code_wall_tps=row[6], tags=tags, note=row[7], kind=row[8],
        )  # fmt: skip

    def get(self, result_id: int) -> StoredResult:
        """One result; :class:`HistoryError` if there is none with that id."""
        with self._guard("reading"):
            entry, text = self._row(result_id)
        if entry.kind != "bench":
            raise HistoryError(
                f"#{result_id} is a load run, not a benchmark: it has levels, not runs",
                hint=f"`llm-dyno history show {result_id}` shows its levels",
            )
        try:
            result = BenchResult.from_dict(loads_outside(text, f"result #{result_id}"))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise HistoryError(
                f"result #{result_id} in {self.path} is damaged: its stored JSON does not read "
                f"({type(exc).__name__}: {str(exc)[:120]}); the other results are not affected",
                hint=f"`llm-dyno history delete {result_id}` removes it",
            ) from None
        return StoredResult(entry, result)

    def _row(self, result_id: int) -> tuple[HistoryEntry, str]:
        row = self._conn.execute(
            "SELECT id, started, profile, model, suite, narr_wall_tps, code_wall_tps, note, kind, json"
            " FROM results WHERE id = ?",
            (result_id,),
        ).fetchone()
        if row is None:
            raise HistoryError(f"no result with id {result_id}", hint="`llm-dyno history list` shows the ids")
        return self._entry(row[:9]), str(row[9])

    def entry(self, result_id: int) -> HistoryEntry:
        """One entry's columns (its ``kind`` says whether :meth:`get` or :meth:`get_load` reads it)."""
        with self._guard("reading"):
            return self._row(result_id)[0]

    def add_load(self, result: LoadResult, *, tags: tuple[str, ...] = (), note: str = "") -> int:
        """Store a load run; returns its id (shared with benchmarks: ``history show ID`` reads either)."""
        with self._guard("writing"), self._tx():
            cur = self._conn.execute(
                "INSERT INTO results (started, profile, model, suite, narr_wall_tps, code_wall_tps, json,"
                " note, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'load')",
                (*_load_columns(result), note),
            )
            rid = int(cur.lastrowid or 0)
            for tag in tags:
                self._conn.execute("INSERT OR IGNORE INTO result_tags VALUES (?, ?)", (rid, tag))
        return rid

    def replace_load(self, result_id: int, result: LoadResult) -> None:
        """Store a newer state of a load run (saved level by level); its tags and note stay."""
        self._require(result_id)
        with self._guard("writing"), self._tx():
            self._conn.execute(
                "UPDATE results SET started = ?, profile = ?, model = ?, suite = ?, narr_wall_tps = ?,"
                " code_wall_tps = ?, json = ? WHERE id = ? AND kind = 'load'",
                (*_load_columns(result), result_id),
            )

    def get_load(self, result_id: int) -> tuple[HistoryEntry, LoadResult]:
        """One load run; :class:`HistoryError` if there is none with that id or it is a benchmark."""
        with self._guard("reading"):
            entry, text = self._row(result_id)
        if entry.kind != "load":
            raise HistoryError(f"#{result_id} is a benchmark, not a load run")
        try:
            return entry, LoadResult.model_validate(loads_outside(text, f"result #{result_id}"))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise HistoryError(
                f"load run #{result_id} in {self.path} is damaged: its stored JSON does not read "
                f"({type(exc).__name__}: {str(exc)[:120]}); the other results are not affected",
                hint=f"`llm-dyno history delete {result_id}` removes it",
            ) from None

    def _require(self, result_id: int) -> None:
        with self._guard("reading"):
            found = self._conn.execute("SELECT 1 FROM results WHERE id = ?", (result_id,)).fetchone()
        if found is None:
            raise HistoryError(f"no result with id {result_id}", hint="`llm-dyno history list` shows the ids")

    def tag(self, result_id: int, tag: str) -> None:
        """Add a tag (idempotent)."""
        self._require(result_id)
        if not tag.strip():
            raise HistoryError("a tag cannot be empty")
        with self._guard("writing"), self._tx():
            self._conn.execute("INSERT OR IGNORE INTO result_tags VALUES (?, ?)", (result_id, tag.strip()))

    def note(self, result_id: int, text: str) -> None:
        """Replace the note."""
        self._require(result_id)
        with self._guard("writing"), self._tx():
            self._conn.execute("UPDATE results SET note = ? WHERE id = ?", (text, result_id))

    def delete(self, result_id: int) -> None:
        """Delete a result and its tags."""
        self._require(result_id)
        with self._guard("writing"), self._tx():
            self._conn.execute("DELETE FROM result_tags WHERE result_id = ?", (result_id,))
            self._conn.execute("DELETE FROM results WHERE id = ?", (result_id,))


class _Transaction:
    """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")  # the write lock first: all of the result, or none of it

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")
