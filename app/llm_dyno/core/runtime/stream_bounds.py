"""Every streamed answer of a Docker engine bounded, as :mod:`docker_bounds` bounds those read whole.

docker-py reads a stream's frames whole (a multiplexed frame header may claim 4 GiB: ``recv(4 GiB)``,
``raw.read(4 GiB)``; a pull's chunk likewise), turns the socket's timeout off for logs, and gives no
stream a total time: an engine that sends one endless line grows the app without end, and one that
drips a byte every few seconds holds a hook, a pull or a GPU reading for ever.

Here each stream is read in pieces of at most :data:`PIECE` bytes and split into lines of at most
``MAX_LINE_CHARS`` (cut and marked, :class:`~llm_dyno.core.runtime.lines.LineSplitter`); only the
lines handed on are kept, by their reader's own bounded buffer. A stream that must end (exec output,
a pull) has, in its :class:`StreamBounds`, a size cap, a total deadline and a longest wait for a
complete line; a guard thread shuts the socket down when one passes (or ``cancel`` is set), so even
an engine gone silent ends it, with :class:`~llm_dyno.core.runtime.docker_bounds.EngineAnswerRefused`
naming the stream. A log followed for the container's life has no deadline, but never holds more
than one piece and one line.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from docker import auth

from llm_dyno.core.httpbounds import size_text
from llm_dyno.core.runtime.docker_bounds import EngineAnswerRefused
from llm_dyno.core.runtime.lines import LineSplitter

PIECE = 64 * 1024  # the most read at once, whatever size a frame or chunk claims
_HEADER = struct.Struct(">BxxxL")  # a multiplexed frame: stream (1 stdout, 2 stderr), payload size


@dataclass(frozen=True)
class StreamBounds:
    """What one streamed answer may cost: ``max_bytes`` of payload, ``deadline_s`` in all, and
    ``stall_s`` at most between two complete lines (None: no such bound). ``where`` names it in errors."""

    where: str
    max_bytes: int | None = None
    deadline_s: float | None = None
    stall_s: float | None = None


EXEC_LIMIT = 4 * 1024 * 1024  # nvidia-smi's CSV for 8 GPUs is 2 KB
EXEC_DEADLINE_S = 10.0  # nvidia-smi answers in well under a second
HOOK_OUTPUT_LIMIT = 64 * 1024 * 1024  # a hook's output, all of it (shown in the launch log)
PULL_EVENTS_LIMIT = 256 * 1024 * 1024  # progress events of one pull: a 100-layer image writes a few MB
PULL_DEADLINE_S = 4 * 3600.0  # a 100 GB image on a slow line; never without an end
PULL_STALL_S = 300.0  # an engine that sends no complete progress event for 5 minutes is stuck


def exec_bounds(where: str) -> StreamBounds:
    """The bounds of a short command's output read whole (``docker exec`` of nvidia-smi)."""
    return StreamBounds(where, max_bytes=EXEC_LIMIT, deadline_s=EXEC_DEADLINE_S)


def pull_bounds(image: str) -> StreamBounds:
    """The bounds of the progress of one ``docker pull``."""
    return StreamBounds(
        f"the Docker engine's pull of {image}",
        max_bytes=PULL_EVENTS_LIMIT,
        deadline_s=PULL_DEADLINE_S,
        stall_s=PULL_STALL_S,
    )


class _Guard:
    """Shuts ``sock`` down when a bound passes or ``cancel`` is set, so a blocked read returns."""

    def __init__(
        self, sock: socket.socket | None, bounds: StreamBounds, cancel: threading.Event | None
    ) -> None:
        self._sock = sock
        self._bounds = bounds
        self._cancel = cancel
        self._started = self.last_line = time.monotonic()
        self.reason: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="llm-dyno-stream-guard", daemon=True)

    def __enter__(self) -> _Guard:
        if (
            self._bounds.deadline_s is not None
            or self._bounds.stall_s is not None
            or self._cancel is not None
        ):
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def expired(self) -> str | None:
        """Why the stream must end now, if it must."""
        if self.reason is None:
            now, b = time.monotonic(), self._bounds
            if self._cancel is not None and self._cancel.is_set():
                self.reason = "cancelled"
            elif b.deadline_s is not None and now - self._started >= b.deadline_s:
                self.reason = "deadline"
            elif b.stall_s is not None and now - self.last_line >= b.stall_s:
                self.reason = "stall"
        return self.reason

    def _watch(self) -> None:
        while not self._done.wait(0.2):
            if self.expired() is not None:
                if self._sock is not None:
                    with contextlib.suppress(OSError):
                        self._sock.shutdown(socket.SHUT_RDWR)
                return


def _refused(bounds: StreamBounds, reason: str, got: int) -> EngineAnswerRefused:
    if reason == "size":
        return EngineAnswerRefused(
            f"{bounds.where}: more than {size_text(bounds.max_bytes or 0)} arrived; cut off there "
            "(is the engine, or what runs in the container, writing without end?)",
            kind="size",
        )
    if reason == "stall":
        return EngineAnswerRefused(
            f"{bounds.where}: no complete line for {bounds.stall_s:g} s ({got:,} bytes arrived); gave up "
            "(is the engine stuck, or DOCKER_HOST / docker.host not a Docker engine?)",
            kind="deadline",
        )
    return EngineAnswerRefused(
        f"{bounds.where}: not finished within {bounds.deadline_s:g} s ({got:,} bytes arrived); gave up "
        "(is the engine overloaded, or what runs in the container hanging?)",
        kind="deadline",
    )


def _exactly(read: Callable[[int], bytes], n: int) -> bytes | None:
    """``n`` bytes, or None at the end of the stream (a header broken off ends it too)."""
    data = b""
    while len(data) < n:
        more = read(n - len(data))
        if not more:
            return None
        data += more
    return data


def _pieces(read: Callable[[int], bytes], *, multiplexed: bool) -> Iterator[tuple[int, bytes]]:
    """The payload of a Docker stream in pieces of at most :data:`PIECE` bytes, each with the stream
    it belongs to (1 stdout, 2 stderr): frames (``multiplexed``: not a tty) are read piece by piece,
    never whole."""
    if not multiplexed:
        while piece := read(PIECE):
            yield 1, piece
        return
    while (header := _exactly(read, _HEADER.size)) is not None:
        stream, left = _HEADER.unpack(header)
        while left > 0:
            piece = read(min(left, PIECE))
            if not piece:
                return
            left -= len(piece)
            yield stream, piece


def _guarded(
    read: Callable[[int], bytes], guard: _Guard, bounds: StreamBounds, *, multiplexed: bool
) -> Iterator[tuple[int, bytes]]:
    """The pieces of the stream within ``bounds`` (the guard's and the size cap)."""
    got = 0
    try:
        for stream, piece in _pieces(read, multiplexed=multiplexed):
            got += len(piece)
            if bounds.max_bytes is not None and got > bounds.max_bytes:
                raise _refused(bounds, "size", got)
            yield stream, piece
            if guard.expired() is not None:
                break
    except EngineAnswerRefused:
        raise
    except Exception as exc:  # the guard shut the socket down, or the engine broke the stream off
        if guard.expired() is None:  # said as an engine's failure, which every caller handles
            raise EngineAnswerRefused(f"{bounds.where}: the stream broke off: {exc}", kind="broken") from exc
    reason = guard.expired()
    if reason is not None and reason != "cancelled":
        raise _refused(bounds, reason, got)


def bounded_pieces(
    read: Callable[[int], bytes],
    sock: socket.socket | None,
    bounds: StreamBounds,
    *,
    multiplexed: bool,
    cancel: threading.Event | None = None,
) -> Iterator[bytes]:
    """The payload of the stream ``read`` reads (``sock``: its socket, shut down when a bound
    passes), in pieces of at most :data:`PIECE` bytes; raises EngineAnswerRefused when a bound of
    ``bounds`` breaks (``stall_s`` is for lines: not checked here). A stream ended by ``cancel``
    just ends."""
    with _Guard(sock, replace(bounds, stall_s=None), cancel) as guard:
        for _stream, piece in _guarded(read, guard, bounds, multiplexed=multiplexed):
            yield piece


def bounded_lines(
    read: Callable[[int], bytes],
    sock: socket.socket | None,
    bounds: StreamBounds,
    *,
    multiplexed: bool,
    cancel: threading.Event | None = None,
) -> Iterator[str]:
    """:func:`bounded_pieces` as lines, each cut at ``MAX_LINE_CHARS`` (and ``stall_s`` at most
    between two of them); stdout's and stderr's lines apart, so that neither breaks into the other's."""
    splitters: dict[int, LineSplitter] = {}
    with _Guard(sock, bounds, cancel) as guard:
        for stream, piece in _guarded(read, guard, bounds, multiplexed=multiplexed):
            lines = splitters.setdefault(stream, LineSplitter()).feed(piece)
            if lines:
                guard.last_line = time.monotonic()
            yield from lines
    for splitter in splitters.values():
        yield from splitter.flush()


def _socket_of(raw: Any) -> socket.socket | None:
    """The OS socket under what docker-py hands out (a socket, a SocketIO, TLS's wrapper)."""
    for candidate in (raw, getattr(raw, "_sock", None), getattr(getattr(raw, "_sock", None), "_sock", None)):
        if isinstance(candidate, socket.socket):
            return candidate
    return None


def _socket_reader(raw: Any) -> Callable[[int], bytes]:
    if hasattr(raw, "recv"):
        return lambda n: bytes(raw.recv(n))
    return lambda n: bytes(raw.read(n) or b"")


def exec_lines(
    api: Any, exec_id: str, bounds: StreamBounds, *, cancel: threading.Event | None = None
) -> Iterator[str]:
    """The output lines of the created exec ``exec_id`` (docker-py's low-level ``api``), started here,
    within ``bounds``."""
    raw = api.exec_start(exec_id, socket=True)
    sock = _socket_of(raw)
    try:
        yield from bounded_lines(_socket_reader(raw), sock, bounds, multiplexed=True, cancel=cancel)
    finally:  # the connection was upgraded to the stream: it is never reused
        for close in (
            getattr(getattr(raw, "_response", None), "close", None),
            raw.close,
            getattr(sock, "close", None),
        ):
            if close is not None:
                with contextlib.suppress(Exception):
                    close()


def exec_output(api: Any, container_id: str, cmd: list[str], bounds: StreamBounds) -> tuple[int, str]:
    """Run ``cmd`` in the container (``docker exec``) and return its exit status and output, read
    within ``bounds``; raises EngineAnswerRefused when the output breaks one."""
    exec_id = api.exec_create(container_id, cmd)["Id"]
    text = "\n".join(exec_lines(api, exec_id, bounds))
    code = api.exec_inspect(exec_id).get("ExitCode")
    return int(code if code is not None else 0), text


def _response_reader(response: Any) -> Callable[[int], bytes]:
    raw = response.raw
    return lambda n: bytes(raw.read1(n, decode_content=True) or b"")


def _log_stream(api: Any, container_id: str, *, follow: bool, since: int | None) -> tuple[Any, bool]:
    """The open response of ``GET /containers/ID/logs`` and whether its frames are multiplexed."""
    tty = bool((api.inspect_container(container_id).get("Config") or {}).get("Tty"))
    params: dict[str, Any] = {"stdout": 1, "stderr": 1, "follow": int(follow), "timestamps": 0, "tail": "all"}
    if since is not None:
        params["since"] = since
    response = api._get(api._url("/containers/{0}/logs", container_id), params=params, stream=True)
    try:
        api._raise_for_status(response)
    except BaseException:
        response.close()
        raise
    return response, not tty


def log_lines(
    api: Any,
    container_id: str,
    *,
    follow: bool,
    since: int | None = None,
    bounds: StreamBounds | None = None,
    cancel: threading.Event | None = None,
) -> Iterator[str]:
    """The container's log lines (stdout and stderr, as ``docker logs``), followed while it runs
    when ``follow``; within ``bounds`` (none by default: a log followed for the container's life)."""
    response, multiplexed = _log_stream(api, container_id, follow=follow, since=since)
    try:
        yield from bounded_lines(
            _response_reader(response),
            _socket_of(api._get_raw_response_socket(response)),
            bounds or StreamBounds(f"the log of container {container_id[:12]}"),
            multiplexed=multiplexed,
            cancel=cancel,
        )
    finally:
        response.close()


def log_pieces(api: Any, container_id: str, bounds: StreamBounds) -> Iterator[bytes]:
    """The container's whole log as it is now (not followed), its bytes as written, within ``bounds``."""
    response, multiplexed = _log_stream(api, container_id, follow=False, since=None)
    try:
        sock = _socket_of(api._get_raw_response_socket(response))
        yield from bounded_pieces(_response_reader(response), sock, bounds, multiplexed=multiplexed)
    finally:
        response.close()


def pull_lines(
    api: Any, repository: str, tag: str, *, cancel: threading.Event | None = None
) -> Iterator[str]:
    """The progress events (one JSON object a line) of ``docker pull repository:tag``, within
    :func:`pull_bounds`; leaving the iteration closes the stream, which cancels the pull."""
    registry, _ = auth.resolve_repository_name(repository)
    headers = {}
    header = auth.get_config_header(api, registry)
    if header:
        headers["X-Registry-Auth"] = header
    params = {"tag": tag, "fromImage": repository}
    response = api._post(
        api._url("/images/create"), params=params, headers=headers, stream=True, timeout=None
    )
    try:
        api._raise_for_status(response)
        raw = api._get_raw_response_socket(response)
        reader = _response_reader(response)
        yield from bounded_lines(
            reader, _socket_of(raw), pull_bounds(f"{repository}:{tag}"), multiplexed=False, cancel=cancel
        )
    finally:
        response.close()
