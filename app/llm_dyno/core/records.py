"""The base of the records that are stored or sent, and a dataclass's JSON form derived from its fields.

:class:`Record` is a frozen pydantic model that refuses unknown keys: ``model_dump(mode="json")`` is
its stored form (fields by name, in order; a record whose stored keys differ from its fields says so
with a ``model_serializer``) and ``model_validate`` reads it back.

:func:`fields_dict` walks a dataclass's fields in order: a nested record is written by its own
``to_dict`` or ``model_dump`` (so its stored layout stays its own), a tuple as a list, an enum as its
value, anything else as it is. A dataclass whose stored keys differ from its fields (renamed,
derived or left out) keeps a ``to_dict`` of its own.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A frozen record that refuses unknown keys (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    to_dict = getattr(value, "to_dict", None)
    if dataclasses.is_dataclass(value) and callable(to_dict):
        return to_dict()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


def fields_dict(record: Any) -> dict[str, Any]:
    """``record``'s fields by name, in order, as JSON-ready values (see the module docstring)."""
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"not a dataclass instance: {record!r}")
    return {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
