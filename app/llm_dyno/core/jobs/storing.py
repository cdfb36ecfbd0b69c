"""Storing a job's result as it grows: the first finished part adds it to the history, every later
one replaces it, so Ctrl-C, a crash or a malformed answer keeps what had finished. A store that fails
is reported (:class:`StoreFailed`) and the job goes on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from llm_dyno.core.history.schema import HistoryError
from llm_dyno.core.history.store import HistoryStore

R = TypeVar("R")
Stored = Callable[["ResultStored | StoreFailed"], None]


@dataclass(frozen=True)
class ResultStored:
    """The result so far is in the history under ``result_id`` (``runs`` finished parts)."""

    result_id: int
    runs: int


@dataclass(frozen=True)
class StoreFailed:
    """Storing failed (the run goes on; the message says why)."""

    message: str


class RunByRun(Generic[R]):
    """Calls ``add(history, result)`` the first time, ``replace(history, id, result)`` after."""

    def __init__(
        self,
        history: HistoryStore | None,
        emit: Stored,
        add: Callable[[HistoryStore, R], int],
        replace: Callable[[HistoryStore, int, R], None],
        parts: Callable[[R], int],
    ) -> None:
        self._history, self._emit = history, emit
        self._add, self._replace, self._parts = add, replace, parts
        self.result_id: int | None = None

    def __call__(self, result: R) -> None:
        history = self._history
        if history is None:
            return
        try:
            if self.result_id is None:
                self.result_id = self._add(history, result)
            else:
                self._replace(history, self.result_id, result)
        except (HistoryError, OSError) as exc:
            self._emit(StoreFailed(f"could not store the result: {exc}"))
            return
        except Exception as exc:  # sqlite3 errors not wrapped by the store (disk full, I/O)
            self._emit(StoreFailed(f"could not store the result: {type(exc).__name__}: {exc}"))
            return
        self._emit(ResultStored(self.result_id, self._parts(result)))


__all__ = ["ResultStored", "RunByRun", "StoreFailed"]
