"""Storing a job's result as it grows: the first finished part adds it to the history, every later
one replaces it, so Ctrl-C, a crash or a malformed answer keeps what had finished. A store that fails
is reported (:class:`StoreFailed`) and the job goes on; the job's outcome then names no stored id
(:attr:`RunByRun.saved_id`) but what is missing (:meth:`RunByRun.unsaved`): a result is only ever
said to be "saved as #N" when #N holds all of it."""

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
        self.result_id: int | None = None  # the row, once added (it may hold fewer parts: see saved_id)
        self.stored_parts = 0  # parts the row holds (at the last store that worked)
        self.failure: str | None = None  # why the latest store failed (None: it worked)

    @property
    def saved_id(self) -> int | None:
        """The row that holds the result as last given (None when the latest store failed)."""
        return self.result_id if self.failure is None else None

    def unsaved(self, parts: int, noun: str = "runs") -> str | None:
        """When the latest store failed: one sentence of what failed and what the history holds of a
        result of ``parts`` parts, ``noun`` naming them (None when it is stored whole)."""
        if self.failure is None:
            return None
        if self.result_id is None:
            return f"the result was not stored: {self.failure}"
        return (
            f"the result is not stored whole: #{self.result_id} holds {self.stored_parts} of {parts} {noun} "
            f"({self.failure})"
        )

    def __call__(self, result: R) -> None:
        history = self._history
        if history is None:
            return
        try:
            if self.result_id is None:
                self.result_id = self._add(history, result)
            else:
                self._replace(history, self.result_id, result)
        except HistoryError as exc:
            self._failed(exc.message)  # its hint (a terminal's "→ …" line) is the command's to give
            return
        except OSError as exc:
            self._failed(str(exc))
            return
        except Exception as exc:  # sqlite3 errors not wrapped by the store (disk full, I/O)
            self._failed(f"{type(exc).__name__}: {exc}")
            return
        self.failure, self.stored_parts = None, self._parts(result)
        self._emit(ResultStored(self.result_id, self.stored_parts))

    def _failed(self, why: str) -> None:
        self.failure = why
        self._emit(StoreFailed(f"could not store the result: {why}"))


__all__ = ["ResultStored", "RunByRun", "StoreFailed"]
