"""A plain text-level Server-Sent Events parser, kept as the reference the app's bytes-level
``llm_dyno.core.bench.sse.SSEDataParser`` is tested against (same events for any split of a stream)."""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its type (``message`` unless an ``event:`` line said otherwise) and data."""

    data: str
    event: str = "message"


class SSEParser:
    """Feed bytes as they arrive; get whole events back."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        # a chunk that ended with "\r" may be the first half of "\r\n"
        self._skip_lf = False

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        """Add a chunk; return the events it completed (possibly none)."""
        text = chunk if isinstance(chunk, str) else self._decoder.decode(chunk)
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        self._skip_lf = False
        self._buffer += text
        events: list[SSEEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                break
            end, width = cut
            line = self._buffer[:end]
            if width == 1 and self._buffer[end] == "\r" and end + 1 == len(self._buffer):
                self._skip_lf = True
            self._buffer = self._buffer[end + width :]
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: complete ``data:`` lines still waiting for their blank line are delivered;
        an unterminated last line is a truncated one and is dropped."""
        self.feed(self._decoder.decode(b"", final=True))
        self._buffer = ""
        event = self._line("")
        return [event] if event is not None else []

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent("\n".join(self._data), self._event or "message")
            self._data = []
            self._event = ""
            return event
        if line.startswith(":"):
            return None  # comment / keep-alive
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        # "id" and "retry" do not matter to a benchmark client
        return None


def _line_end(buffer: str) -> tuple[int, int] | None:
    """Index and width of the first line terminator (``\\r\\n``, ``\\n`` or ``\\r``)."""
    lf = buffer.find("\n")
    cr = buffer.find("\r")
    if cr == -1:
        return None if lf == -1 else (lf, 1)
    if lf != -1 and lf < cr:
        return lf, 1
    return (cr, 2) if lf == cr + 1 else (cr, 1)
