"""Incremental Server-Sent Events parsing (the WHATWG event-stream rules that the OpenAI API uses).

Network chunks split anywhere: inside a UTF-8 character, inside a ``data:`` line, between ``\\r`` and
``\\n``. The parser buffers until a line is complete and dispatches an event at each blank line.
"""

from __future__ import annotations


class SSEDataParser:
    """The benchmark client's parser: bytes in, each event's ``data`` as bytes out.

    The WHATWG event-stream line and event rules, but no text decoding and no event objects: the
    client only needs the data of each event and hands it to ``json.loads`` (which takes UTF-8 bytes),
    and a chunk of a streamed completion then costs a split and a few comparisons. Event names, ids and
    retry times are ignored (an OpenAI-compatible stream uses none of them).
    """

    def __init__(self) -> None:
        self._rest = b""  # an unterminated line, waiting for the rest of it
        self._data: list[bytes] = []
        # a chunk that ended with "\r" may be the first half of "\r\n"
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add a chunk; return the data of the events it completed (possibly none)."""
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
        events: list[bytes] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                self._data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif line == b"data":
                self._data.append(b"")
            # comments (":…"), "event", "id" and "retry" lines do not matter to the benchmark
        return events

    def close(self) -> list[bytes]:
        """End of stream: complete ``data:`` lines still waiting for their blank line are delivered;
        an unterminated last line is a truncated one and is dropped."""
        self._rest, self._skip_lf = b"", False
        events = self.feed(b"\n")
        self._rest, self._data = b"", []
        return events
