"""Incremental Server-Sent Events parsing (the WHATWG event-stream rules that the OpenAI API uses).

Network chunks split anywhere: inside a UTF-8 character, inside a ``data:`` line, between ``\\r`` and
``\\n``. The parser buffers until a line is complete and dispatches an event at each blank line.

A hostile or broken server can send a line that never ends or ``data:`` lines with no blank line
between them: both are bounded (``max_event_bytes``), so the buffer never grows past the bound and
the stream ends with :class:`SSELimitError` naming where it happened.
"""

from __future__ import annotations

# One chunk of a streamed completion is a few hundred bytes; a whole 1,000-token answer in a single
# event (a non-streaming proxy) is under 100 KB. 1 MiB leaves ample room and bounds the buffer.
MAX_EVENT_BYTES = 1024 * 1024


class SSELimitError(ValueError):
    """A line or an event of the stream is larger than the parser's bound."""

    def __init__(self, what: str, limit: int, at_byte: int) -> None:
        mib = f"{limit / (1024 * 1024):g} MiB"
        super().__init__(f"the server sent a streaming {what} over {mib} at byte {at_byte:,} of the stream")
        self.at_byte = at_byte


class SSEDataParser:
    """The benchmark client's parser: bytes in, each event's ``data`` as bytes out.

    The WHATWG event-stream line and event rules, but no text decoding and no event objects: the
    client only needs the data of each event and hands it to ``loads_outside`` (UTF-8 bytes in),
    and a chunk of a streamed completion then costs a split and a few comparisons. Event names, ids and
    retry times are ignored (an OpenAI-compatible stream uses none of them).
    """

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        self._seen = 0  # bytes fed so far: where a broken bound sits
        self._data_bytes = 0
        self._rest = b""  # an unterminated line, waiting for the rest of it
        self._data: list[bytes] = []
        # a chunk that ended with "\r" may be the first half of "\r\n"
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add a chunk; return the data of the events it completed (possibly none).

        Raises :class:`SSELimitError` when a line or an event grows past ``max_event_bytes``."""
        self._seen += len(chunk)
        buf = self._rest + chunk if self._rest else chunk
        if self._skip_lf:
            self._skip_lf = False
            if buf.startswith(b"\n"):
                buf = buf[1:]
        if b"\r" in buf:  # rare: vLLM ends lines with "\n"; normalise "\r\n" and "\r" to it
            self._skip_lf = buf.endswith(b"\r")
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._rest = lines.pop()
        if len(self._rest) > self.max_event_bytes:
            self._rest = b""
            raise SSELimitError("line", self.max_event_bytes, self._seen)
        events: list[bytes] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                    self._data = []
                    self._data_bytes = 0
            elif line.startswith(b"data:"):
                self._data.append(line[6:] if line.startswith(b"data: ") else line[5:])
                self._data_bytes += len(line)
                if self._data_bytes > self.max_event_bytes:
                    self._data, self._data_bytes = [], 0
                    raise SSELimitError("event", self.max_event_bytes, self._seen)
            elif line == b"data":
                self._data.append(b"")
            # comments (":…"), "event", "id" and "retry" lines do not matter to the benchmark
        return events

    def close(self) -> list[bytes]:
        """End of stream: complete ``data:`` lines still waiting for their blank line are delivered;
        an unterminated last line is a truncated one and is dropped."""
        self._rest, self._skip_lf = b"", False
        events = self.feed(b"\n")
        self._rest, self._data, self._data_bytes = b"", [], 0
        return events
