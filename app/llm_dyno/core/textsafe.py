"""Text from outside (profiles, servers, logs) made safe for a terminal.

A profile name, a server's error message or a log line may carry escape sequences that retitle the
terminal, hide text, move the cursor or write to the clipboard (OSC 52). The CLI passes everything
it prints through :func:`sanitize` / :func:`sanitize_bytes`: escape sequences and control
characters are removed, a carriage return becomes a line break (tqdm's progress bars stay legible,
and nothing can overwrite a line already shown), tabs and line breaks stay. Bidirectional embedding,
override and isolate controls and the direction marks (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
U+061C) are removed too: they reorder what the terminal shows ("Trojan Source"), so a name could read
as another. A line longer than :data:`LINE_LIMIT` is cut there (:class:`LineBound`), its length noted.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

# ESC followed by a CSI / OSC / DCS / other sequence, then any other C0 or C1 control (not \t \n)
_ESCAPES = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI … final byte
    r"|\x1b[\]PX^_].*?(?:\x07|\x1b\\|$)"  # OSC, DCS, SOS, PM, APC … BEL or ST
    r"|\x1b[@-Z\\-_]?"  # two-character sequences, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]"
    r"|[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]"  # bidi controls and direction marks
)
_TEXT = re.compile(_ESCAPES, re.DOTALL)
_BYTES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_].*?(?:\x07|\x1b\\|$)|\x1b[@-Z\\-_]?"
    rb"|\xc2[\x80-\x9f]|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"
    # the same bidi controls in UTF-8: U+200E/F, U+202A–E, U+2066–9, U+061C
    rb"|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]|\xd8\x9c",
    re.DOTALL,
)


def sanitize(text: str) -> str:
    """``text`` without escape sequences or control characters (``\\r`` becomes ``\\n``)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _TEXT.sub("", text)


def sanitize_bytes(data: bytes) -> bytes:
    """:func:`sanitize` for UTF-8 bytes (a log file streamed as it is)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return _BYTES.sub(b"", data)


LINE_LIMIT = 4000  # characters of one printed line; a 900,000-character model name is not shown whole
_whole = 0  # > 0 while machine output (JSON) is written: never cut, a reader parses it


@contextlib.contextmanager
def whole_lines() -> Iterator[None]:
    """Within it, :class:`LineBound` cuts nothing: JSON a program reads must stay whole."""
    global _whole
    _whole += 1
    try:
        yield
    finally:
        _whole -= 1


class LineBound:
    """Cuts each line of a stream of writes at :data:`LINE_LIMIT` characters: the rest of the line is
    dropped and, at its end, ``… (N characters in all)`` says how long it was. Writes may split a
    line anywhere (``print`` writes the text, then the line break)."""

    def __init__(self, limit: int = LINE_LIMIT) -> None:
        self._limit = limit
        self._column = 0  # characters of the current line seen so far, shown or not

    def __call__(self, text: str) -> str:
        """The part of ``text`` to show."""
        if _whole:
            self._column = len(text) - text.rfind("\n") - 1 if "\n" in text else self._column + len(text)
            return text
        out: list[str] = []
        for i, piece in enumerate(text.split("\n")):
            if i:
                out.append(self._end_line())
            room = self._limit - self._column
            out.append(piece[: max(room, 0)])
            self._column += len(piece)
        return "".join(out)

    def _end_line(self) -> str:
        column, self._column = self._column, 0
        return f"… ({column:,} characters in all)\n" if column > self._limit else "\n"


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """Text from outside made inert for a CSV cell: no escape sequences or control characters, line
    breaks as spaces, and a cell a spreadsheet would run as a formula (``=HYPERLINK(…)``, ``+``, ``-``,
    ``@``) prefixed with ``'``. A number written as text (``-5``, ``1e3``) stays as it is."""
    clean = sanitize(text).replace("\n", " ").replace("\t", " ")
    if clean.startswith(_FORMULA_START):
        try:
            float(clean)
        except ValueError:
            return "'" + clean
    return clean
