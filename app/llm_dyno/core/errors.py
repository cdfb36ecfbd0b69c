"""Errors a user can act on: what failed, where, and what to do."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Fix(StrEnum):
    """What fixes an error, front-end neutral: the CLI shows the error's ``hint`` (a command line), the
    window names its own control for the fix and offers a button where it has one."""

    STOP_SERVER = "stop-server"  # the profile's server runs and must be stopped first
    CHOOSE_KNOBS = "choose-knobs"  # a tune was given nothing to vary


@dataclass(frozen=True)
class Location:
    """Where a problem sits: a file, a line in it (1-based) and a field path such as ``args[3]``."""

    file: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file:
            parts.append(self.file + (f":{self.line}" if self.line else ""))
        elif self.line:
            parts.append(f"line {self.line}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)


class DynoError(Exception):
    """Base of every error the app reports to the user instead of a traceback."""

    def __init__(
        self,
        message: str,
        *,
        where: Location | None = None,
        hint: str | None = None,
        fix: Fix | None = None,
        subject: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint  # for a terminal: may name a command or a flag
        self.fix = fix  # what fixes it, for a front end that has its own controls for that
        self.subject = subject  # what the fix acts on (a profile's name)

    def __str__(self) -> str:
        text = self.message
        if self.where is not None and str(self.where):
            text = f"{self.where}: {text}"
        if self.hint:
            text = f"{text}\n  → {self.hint}"
        return text


class ProfileError(DynoError):
    """A profile (or a file imported as one) is malformed or invalid."""


class ImportFormatError(ProfileError):
    """A compose file or command line cannot be turned into a profile."""


class StoreError(DynoError):
    """The profile store cannot read or write a file."""


def at(file: str | Path | None, line: int | None = None, field: str | None = None) -> Location:
    """Shorthand for a :class:`Location`."""
    return Location(str(file) if file is not None else None, line, field)
