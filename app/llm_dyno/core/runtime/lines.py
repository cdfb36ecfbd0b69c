"""Turn a byte stream (a log file being tailed, ``docker logs`` chunks) into text lines."""

from __future__ import annotations

import codecs


class LineSplitter:
    r"""Split byte chunks into lines at ``\n``, ``\r\n`` or a bare ``\r``.

    tqdm redraws its progress bar with a bare ``\r``; each redraw becomes its own line so that
    progress can be followed live. A ``\r\n`` split across two chunks still counts as one line end,
    and a UTF-8 sequence split across chunks is decoded whole (invalid bytes become U+FFFD).
    Empty lines are dropped. Not thread-safe: feed it from one thread.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._after_cr = False  # the last character seen was a '\r': a leading '\n' is its partner

    def feed(self, chunk: bytes) -> list[str]:
        """Add a chunk; return the lines it completed."""
        return self._split(self._decoder.decode(chunk))

    def flush(self) -> list[str]:
        """End of stream: return the last, unterminated line (if any)."""
        lines = self._split(self._decoder.decode(b"", final=True))
        if self._pending:
            lines.append(self._pending)
        self._pending = ""
        self._after_cr = False
        return lines

    def _split(self, text: str) -> list[str]:
        lines: list[str] = []
        start = 0
        if self._after_cr and text.startswith("\n"):
            start = 1
        if text:
            self._after_cr = False
        buf = self._pending
        i = start
        n = len(text)
        while i < n:
            ch = text[i]
            if ch == "\n" or ch == "\r":
                buf += text[start:i]
                if buf:
                    lines.append(buf)
                buf = ""
                if ch == "\r":
                    if i + 1 < n:
                        if text[i + 1] == "\n":
                            i += 1
                    else:
                        self._after_cr = True
                start = i + 1
            i += 1
        self._pending = buf + text[start:]
        return lines
