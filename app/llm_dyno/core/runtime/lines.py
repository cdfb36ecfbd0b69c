"""Turn a byte stream (a log file being tailed, ``docker logs`` chunks) into text lines."""

from __future__ import annotations

import codecs
import re

# A log line longer than this is cut (the rest up to its end is dropped, and the cut is said): a
# server that writes megabytes without a newline costs bounded memory and linear time.
MAX_LINE_CHARS = 64 * 1024
_LINE_END = re.compile(r"\r\n|\r|\n")


def cut_note(length: int) -> str:
    """What ends a line that was cut."""
    return f" … [line cut: {length:,} characters, more than {MAX_LINE_CHARS:,}]"


class LineSplitter:
    r"""Split byte chunks into lines at ``\n``, ``\r\n`` or a bare ``\r``.

    tqdm redraws its progress bar with a bare ``\r``; each redraw becomes its own line so that
    progress can be followed live. A ``\r\n`` split across two chunks still counts as one line end,
    and a UTF-8 sequence split across chunks is decoded whole (invalid bytes become U+FFFD).
    Empty lines are dropped; a line over :data:`MAX_LINE_CHARS` is cut (:func:`cut_note`), and the
    time spent is linear in the input. Not thread-safe: feed it from one thread.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []  # the pending (unterminated) line, at most MAX_LINE_CHARS kept
        self._kept = 0
        self._length = 0  # the pending line's full length, cut or not
        self._after_cr = False  # the last character seen was a '\r': a leading '\n' is its partner

    def feed(self, chunk: bytes) -> list[str]:
        """Add a chunk; return the lines it completed."""
        return self._split(self._decoder.decode(chunk))

    def flush(self) -> list[str]:
        """End of stream: return the last, unterminated line (if any)."""
        lines = self._split(self._decoder.decode(b"", final=True))
        last = self._take()
        if last:
            lines.append(last)
        self._after_cr = False
        return lines

    def _add(self, piece: str) -> None:
        self._length += len(piece)
        room = MAX_LINE_CHARS - self._kept
        if room > 0 and piece:
            kept = piece[:room]
            self._parts.append(kept)
            self._kept += len(kept)

    def _take(self) -> str:
        line = "".join(self._parts)
        if self._length > MAX_LINE_CHARS:
            line += cut_note(self._length)
        self._parts, self._kept, self._length = [], 0, 0
        return line

    def _split(self, text: str) -> list[str]:
        lines: list[str] = []
        if not text:
            return lines
        start = 1 if self._after_cr and text.startswith("\n") else 0
        self._after_cr = text.endswith("\r")
        for end in _LINE_END.finditer(text, start):
            self._add(text[start : end.start()])
            line = self._take()
            if line:
                lines.append(line)
            start = end.end()
        self._add(text[start:])
        return lines
