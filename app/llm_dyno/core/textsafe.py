"""Text from outside (profiles, servers, logs) made safe for a terminal.

A profile name, a server's error message or a log line may carry escape sequences that retitle the
terminal, hide text, move the cursor or write to the clipboard (OSC 52). The CLI passes everything
it prints through :func:`sanitize` / :func:`sanitize_bytes`: escape sequences and control
characters are removed, a carriage return becomes a line break (tqdm's progress bars stay legible,
and nothing can overwrite a line already shown), tabs and line breaks stay.
"""

from __future__ import annotations

import re

# ESC followed by a CSI / OSC / DCS / other sequence, then any other C0 or C1 control (not \t \n)
_ESCAPES = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI … final byte
    r"|\x1b[\]PX^_].*?(?:\x07|\x1b\\|$)"  # OSC, DCS, SOS, PM, APC … BEL or ST
    r"|\x1b[@-Z\\-_]?"  # two-character sequences, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]"
)
_TEXT = re.compile(_ESCAPES, re.DOTALL)
_BYTES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_].*?(?:\x07|\x1b\\|$)|\x1b[@-Z\\-_]?"
    rb"|\xc2[\x80-\x9f]|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]",
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
