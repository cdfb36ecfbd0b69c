"""JSON and text from outside the app (servers, streams, Docker, files), read so that no answer can take
the app down and no text can break a later write.

- :func:`loads_outside` is the one way to parse JSON that someone else wrote. ``json.loads`` raises
  ``RecursionError`` (not ``ValueError``) for an answer of a few kilobytes nested a few thousand deep,
  and one nested just under the interpreter's limit parses but breaks the first ``json.dumps`` or
  recursive walk that meets it later. Here a body nested deeper than :data:`MAX_DEPTH` is refused, and
  every failure (bad JSON, not UTF-8, too deep) is an :class:`OutsideJSONError` naming the source. It
  is a ``ValueError`` as well, so a caller that already handled bad JSON handles it too.
- JSON's ``\\ud800`` escape makes a lone surrogate, which no UTF-8 file, SQLite text or terminal can
  hold: :func:`loads_outside` replaces each one with U+FFFD, and :func:`valid_text` does the same for
  text from anywhere else (a command line's undecodable bytes arrive as surrogates too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from llm_dyno.core.errors import DynoError

# The deepest nesting any answer the app reads has is under 10 (a profile snapshot, `docker inspect`);
# 100 is far above that and far below the interpreter's recursion limit (1,000).
MAX_DEPTH = 100

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# a \uD800-\uDFFF escape in the raw text: only then can the parsed value hold a lone surrogate
_SURROGATE_ESCAPE_B = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_S = re.compile(r"\\u[dD][89a-fA-F]")


class OutsideJSONError(DynoError, ValueError):
    """JSON from outside could not be read: not JSON, not UTF-8, or nested deeper than :data:`MAX_DEPTH`.

    ``source`` names where it came from (``GET /v1/models``, ``container vllm-x label …``, a file);
    ``kind`` is ``"json"`` (not JSON), ``"utf8"`` (not UTF-8) or ``"depth"`` (nested too deep)."""

    def __init__(self, message: str, *, source: str, kind: str, detail: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.source = source
        self.kind = kind
        self.detail = detail  # the reason alone ("Expecting value at column 3"), for a caller's message


def valid_text(text: str) -> str:
    """``text`` as valid Unicode: each lone surrogate (``\\ud800``, or an undecodable byte that Python
    carried as one) becomes U+FFFD, so the text can be written as UTF-8 anywhere."""
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def loads_outside(
    data: str | bytes | bytearray,
    source: str,
    *,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """Parse JSON that ``source`` sent or wrote (an answer, a stream event, a label, a file).

    Returns the value with every lone surrogate in its strings replaced (:func:`valid_text`); raises
    :class:`OutsideJSONError` naming ``source`` when the data is not UTF-8, not JSON, or nested deeper
    than :data:`MAX_DEPTH`. ``parse_constant`` is ``json.loads``'s (``NaN``, ``Infinity``)."""
    try:
        # strict UTF-8 (json.loads would guess UTF-16 or -32 for bytes that look like it)
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        value = json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        raise _too_deep(source) from None
    except UnicodeDecodeError as exc:
        detail = f"not UTF-8 text (byte {exc.start})"
        raise OutsideJSONError(f"{source}: {detail}", source=source, kind="utf8", detail=detail) from None
    except ValueError as exc:
        if isinstance(exc, OutsideJSONError):
            raise  # from parse_constant
        detail = str(exc)
        if isinstance(exc, json.JSONDecodeError):
            where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno}"
            detail = f"{exc.msg} at {where}"
        message = f"{source}: not valid JSON ({detail})"
        raise OutsideJSONError(message, source=source, kind="json", detail=detail) from None
    if isinstance(value, dict | list):
        # at most one level per bracket: a body with few of them needs no walk
        opens = _count(data, "[") + _count(data, "{")
        if opens > MAX_DEPTH and _depth(value) > MAX_DEPTH:
            raise _too_deep(source)
    if _has_surrogate_escape(data):
        value = _clean(value)
    return value


def _too_deep(source: str) -> OutsideJSONError:
    detail = f"nested more than {MAX_DEPTH} levels deep"
    return OutsideJSONError(
        f"{source}: the JSON is {detail}; refused",
        source=source,
        kind="depth",
        detail=detail,
        hint="no server or tool the app reads nests its answers like this: is it the one you meant?",
    )


def _count(data: str | bytes | bytearray, char: str) -> int:
    return data.count(char) if isinstance(data, str) else data.count(char.encode())


def _has_surrogate_escape(data: str | bytes | bytearray) -> bool:
    if isinstance(data, str):
        return _SURROGATE_ESCAPE_S.search(data) is not None
    return _SURROGATE_ESCAPE_B.search(data) is not None


def _depth(value: Any) -> int:
    """How deep ``value`` nests (a scalar 0, ``[]`` 1), walked without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > deepest:
            deepest = level
            if deepest > MAX_DEPTH:
                return deepest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _clean(value: Any) -> Any:
    """``value`` with :func:`valid_text` applied to every string in it, keys included (depth is
    bounded by now, so recursion is safe)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {valid_text(k): _clean(v) for k, v in value.items()}
    return value
