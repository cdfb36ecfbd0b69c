"""Bounded HTTP reads: every body has a size cap, every request an overall deadline.

httpx's timeouts are per read: a server that drips one byte a second, or streams forever, never
trips them. Every probe of a server (``/metrics``, ``/version``, ``/v1/models``, ``/health``) reads
its body through :func:`read_body`, which stops at a byte cap and at a deadline for the whole
request; a stream that must stay cancellable while the server says nothing is watched by a
:class:`Watchdog`, which shuts the socket down (that wakes a blocked ``recv`` at once).

Before there is a response to read (connecting, sending, waiting for the status line and headers, which
a server can drip as slowly as a body) :func:`send_bounded` keeps the same deadline: httpcore's trace
hook hands each connection's socket to the client's :class:`SocketLedger` as it is made, and a
:class:`Watchdog` over the ledger shuts them down when the deadline passes or ``cancel`` is set.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

from llm_dyno.core.errors import DynoError

KIB = 1024
MIB = 1024 * KIB

# Real vLLM /metrics bodies are 20–300 KB (more with many engines and histograms): 16 MiB is ample.
METRICS_LIMIT = 16 * MIB
# /version, /v1/models, /health and error bodies are a few hundred bytes.
SMALL_LIMIT = 1 * MIB


class BoundsError(DynoError):
    """A server's answer broke a bound: too large, or not finished by the deadline."""

    def __init__(self, message: str, *, kind: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind  # "size" or "deadline"


def size_text(n: int) -> str:
    """``16 MiB``, ``512 KiB``, ``300 bytes``: a limit as people read it."""
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n:,} bytes"


def too_large(url: str, limit: int, what: str = "answer") -> BoundsError:
    """The error for a body over ``limit``."""
    return BoundsError(
        f"{url}: the {what} is over {size_text(limit)}; refused (is this the server you meant?)",
        kind="size",
    )


def too_slow(url: str, deadline_s: float, got: int) -> BoundsError:
    """The error for a body not finished within ``deadline_s``."""
    return BoundsError(
        f"{url}: no complete answer within {deadline_s:g} s ({got:,} bytes arrived); gave up",
        kind="deadline",
        hint="the server is overloaded, stuck, or not an OpenAI-compatible server",
    )


def _chunks(response: httpx.Response) -> Iterator[bytes]:
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    # a transport's own response (no client) has no decoder: its raw stream is the body
    return response.iter_raw() if encoding == "identity" else response.iter_bytes()


def read_body(
    response: httpx.Response,
    url: str,
    *,
    limit: int,
    deadline_s: float,
    what: str = "answer",
    started: float | None = None,
) -> bytes:
    """Read a streamed ``response`` whole, at most ``limit`` bytes (decoded) and within ``deadline_s``
    of ``started`` (``time.monotonic()``; default now); raises :class:`BoundsError` otherwise.
    Closes the response."""
    try:
        declared = response.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise too_large(url, limit, what)  # refused before a byte of it is read
        if response.is_stream_consumed:  # already in memory (a test transport's answer)
            if len(response.content) > limit:
                raise too_large(url, limit, what)
            return response.content
        end = (time.monotonic() if started is None else started) + deadline_s
        parts: list[bytes] = []
        got = 0
        for chunk in _chunks(response):
            got += len(chunk)
            if got > limit:
                raise too_large(url, limit, what)
            parts.append(chunk)
            if time.monotonic() > end:
                raise too_slow(url, deadline_s, got)
        return b"".join(parts)
    finally:
        response.close()


def get_bounded(
    client: httpx.Client,
    url: str,
    *,
    limit: int = SMALL_LIMIT,
    deadline_s: float = 10.0,
    headers: dict[str, str] | None = None,
    what: str = "answer",
) -> tuple[int, bytes]:
    """GET ``url`` through ``client``: the status and at most ``limit`` bytes of body, read within
    ``deadline_s``. Raises httpx errors for a failed connection, :class:`BoundsError` for a bound."""
    start = time.monotonic()
    request = client.build_request("GET", url, headers=headers)
    response = send_bounded(client, request, url=url, deadline_s=deadline_s, started=start)
    body = read_body(response, url, limit=limit, deadline_s=deadline_s, what=what, started=start)
    return response.status_code, body


# httpcore's trace events after which a connection's socket exists (plain, Unix, TLS)
_CONNECTED = (
    "connection.connect_tcp.complete",
    "connection.connect_unix_socket.complete",
    "connection.start_tls.complete",
)


class SocketLedger:
    """The sockets one client's (or transport's) connections were made on, as httpcore's trace hook
    hands them over: a request reusing a kept-alive connection uses one of them. Requests on one
    client are sequential here, so shutting them all down at a deadline ends that request only."""

    def __init__(self) -> None:
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` request extension."""
        if event in _CONNECTED:
            get = getattr(info.get("return_value"), "get_extra_info", None)
            sock = get("socket") if get is not None else None
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._sockets.add(sock)

    def sockets(self) -> list[socket.socket]:
        """The sockets still open."""
        with self._lock:
            return [s for s in self._sockets if s.fileno() != -1]


_ledgers: weakref.WeakKeyDictionary[object, SocketLedger] = weakref.WeakKeyDictionary()
_ledgers_lock = threading.Lock()


def ledger_for(owner: object) -> SocketLedger:
    """The ledger of a client or transport (made on first use, dropped with it)."""
    with _ledgers_lock:
        ledger = _ledgers.get(owner)
        if ledger is None:
            ledger = _ledgers[owner] = SocketLedger()
        return ledger


def headers_too_slow(url: str, deadline_s: float) -> BoundsError:
    """The error for an answer whose status line and headers did not arrive within ``deadline_s``."""
    return BoundsError(
        f"{url}: no response headers within {deadline_s:g} s; gave up",
        kind="deadline",
        hint="the server is overloaded, stuck, or not an OpenAI-compatible server",
    )


def send_bounded(
    client: httpx.Client | httpx.BaseTransport,
    request: httpx.Request,
    *,
    url: str,
    deadline_s: float,
    cancel: threading.Event | None = None,
    started: float | None = None,
) -> httpx.Response:
    """Send ``request`` for a streamed response (``client.send(stream=True)``, or a transport's
    ``handle_request``), with the status line and headers due within ``deadline_s`` of ``started``
    and ``cancel`` heard within a tenth of a second. Raises :class:`BoundsError` (deadline),
    :class:`RequestCancelled`, or the httpx error of a failed connection."""
    import httpx

    ledger = ledger_for(client)
    request.extensions["trace"] = ledger.trace
    with Watchdog(ledger, deadline_s=deadline_s, cancel=cancel, started=started) as watch:
        try:
            if isinstance(client, httpx.Client):
                return client.send(request, stream=True)
            return client.handle_request(request)
        except httpx.HTTPError:
            reason = watch.expired()
            if reason == "cancelled":
                raise RequestCancelled(f"{url}: cancelled") from None
            if reason == "deadline":
                raise headers_too_slow(url, deadline_s) from None
            raise


class RequestCancelled(DynoError):
    """A request ended by its ``cancel`` event before an answer arrived."""


def _sockets_of(response: httpx.Response) -> list[socket.socket]:
    stream = response.extensions.get("network_stream")
    get = getattr(stream, "get_extra_info", None)
    sock = get("socket") if get is not None else None
    return [sock] if isinstance(sock, socket.socket) else []


class Watchdog:
    """Ends a streamed response at a deadline or when ``cancel`` is set, even while the server is
    silent: it shuts the connection's socket down, so a read blocked in the kernel returns at once.
    Given a :class:`SocketLedger` instead of a response, it watches a request still waiting for one.

    ``reason`` tells afterwards why it fired (``"cancelled"``, ``"deadline"``) or ``None``. Use it as
    a context manager around the reading loop; ``poll_s`` bounds how late a cancel is noticed.
    """

    def __init__(
        self,
        response: httpx.Response | SocketLedger,
        *,
        deadline_s: float | None,
        cancel: threading.Event | None,
        poll_s: float = 0.1,
        started: float | None = None,
    ) -> None:
        self._sockets: Callable[[], Iterable[socket.socket]] = (
            response.sockets if isinstance(response, SocketLedger) else lambda: _sockets_of(response)
        )
        self.deadline_s = deadline_s
        start = time.monotonic() if started is None else started
        self._end = None if deadline_s is None else start + deadline_s
        self._cancel = cancel
        self._poll_s = poll_s
        self._done = threading.Event()
        self._late = "deadline"  # the reason given when the end passes
        self.reason: str | None = None
        self._thread = threading.Thread(target=self._watch, name="llm-dyno-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        if self._end is not None or self._cancel is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def expired(self) -> str | None:
        """Checked by the reader between chunks: the reason to stop now, if any."""
        if self.reason is None:
            if self._cancel is not None and self._cancel.is_set():
                self.reason = "cancelled"
            elif self._end is not None and time.monotonic() >= self._end:
                self.reason = self._late
        return self.reason

    def end_by(self, seconds: float, *, reason: str) -> None:
        """Bring the end forward to ``seconds`` from now (never later than it was); when it passes,
        the socket is shut down as at the deadline and ``reason`` tells why (e.g. ``"done"``: the
        answer was complete, the rest of the body is not waited for)."""
        end = time.monotonic() + seconds
        if self._end is None or end < self._end:
            self._end = end
            self._late = reason
        if self._thread.ident is None and not self._done.is_set():
            self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(self._poll_s):
            if self.expired() is not None:
                for sock in self._sockets():
                    with contextlib.suppress(OSError):  # already closed: the reader is on its way out
                        sock.shutdown(socket.SHUT_RDWR)
                return
