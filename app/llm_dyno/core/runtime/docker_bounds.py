"""Every answer of a Docker engine bounded in size and total time, as the app bounds vLLM's.

docker-py reads an answer whole (``requests``, ``stream=False``) with a timeout per read only: an
engine that streams ``/containers/json`` for ever grows the app without end, and one that drips a
byte every few seconds holds ``status`` for ever. The seam is ``APIClient.send`` (docker-py's client
is a ``requests.Session``; every call of every client, the ``/version`` asked while it is made
included, goes through it): an answer read whole is read here instead, at most
:data:`ENGINE_LIMIT` bytes (decoded) and within :data:`ENGINE_DEADLINE_S` of the request. A
:class:`~llm_dyno.core.httpbounds.Watchdog` shuts the connection's socket down at the deadline, so
an engine that drips its status line or headers, or goes silent, is cut off there too.

Streamed answers (``stream=True``: logs followed, exec output, image pulls) are read through
:mod:`~llm_dyno.core.runtime.stream_bounds`, which bounds them piece by piece; a call that asks for a
longer wait (``container.stop(timeout=…)``, ``wait(timeout=…)``, ``wait()`` for ever)
keeps the wait it asked for; the size cap still holds.
"""

from __future__ import annotations

import contextvars
import socket
import time
from typing import Any

import docker.errors
import requests
import urllib3.connectionpool
import urllib3.exceptions
from docker.api.client import APIClient

from llm_dyno.core.httpbounds import MIB, SocketLedger, Watchdog, size_text
from llm_dyno.core.jsontext import MAX_DEPTH, OutsideJSONError, loads_outside

# A /containers/json of a few hundred containers, an inspect with the profile snapshot label: a few
# MiB at most. Anything past this is no engine's answer.
ENGINE_LIMIT = 16 * MIB
# An engine on this machine answers in milliseconds, one over ssh in a second or two.
ENGINE_DEADLINE_S = 15.0
_CHUNK = 64 * 1024


class EngineAnswerRefused(docker.errors.DockerException):  # type: ignore[misc]
    """An engine's answer broke a bound (``kind``: ``"size"``, ``"deadline"``, ``"depth"`` or, for a
    stream, ``"broken"``); a DockerException, so every caller that handles the engine's failures
    handles this one."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


class _ConnectionLedger(SocketLedger):
    """The connections one request took from docker-py's pools: their sockets exist only once a new
    connection has connected, so they are looked up when the watchdog asks."""

    def __init__(self) -> None:
        super().__init__()
        self._connections: list[Any] = []

    def add(self, connection: Any) -> None:
        """Record a connection the request is using."""
        self._connections.append(connection)

    def sockets(self) -> list[socket.socket]:
        """The sockets of the request's connections that are open now."""
        found = []
        for connection in self._connections:
            sock = getattr(connection, "sock", None)
            if isinstance(sock, socket.socket) and sock.fileno() != -1:
                found.append(sock)
        return found


_ledger: contextvars.ContextVar[_ConnectionLedger | None] = contextvars.ContextVar(
    "llm_dyno_engine_ledger", default=None
)
_pool_get_conn = urllib3.connectionpool.HTTPConnectionPool._get_conn
_session_send = requests.Session.send


def _get_conn_recorded(self: urllib3.connectionpool.HTTPConnectionPool, timeout: float | None = None) -> Any:
    connection = _pool_get_conn(self, timeout)
    ledger = _ledger.get()
    if ledger is not None:
        ledger.add(connection)
    return connection


def _deadline_for(client: APIClient, timeout: Any) -> float | None:
    """The total time an answer may take: the bound, unless the call asked for a longer wait."""
    read = timeout[1] if isinstance(timeout, tuple) else timeout
    if read is None:
        return None  # e.g. `wait()` for a container to end: the caller asked to wait for ever
    if read == client.timeout:
        return ENGINE_DEADLINE_S  # docker-py's per-read default: an ordinary call
    return max(ENGINE_DEADLINE_S, float(read) + 5.0)


def _where(request: requests.PreparedRequest) -> str:
    url = str(request.url or "")
    path = url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
    return f"the Docker engine's /{path}"


def refused_size(where: str) -> EngineAnswerRefused:
    """The error for an engine answer over :data:`ENGINE_LIMIT`."""
    return EngineAnswerRefused(
        f"{where}: the answer is over {size_text(ENGINE_LIMIT)}; refused (is DOCKER_HOST / docker.host "
        "a Docker engine?)",
        kind="size",
    )


def refused_slow(where: str, deadline_s: float, got: int) -> EngineAnswerRefused:
    """The error for an engine answer not complete within ``deadline_s``."""
    return EngineAnswerRefused(
        f"{where}: no complete answer within {deadline_s:g} s ({got:,} bytes arrived); gave up "
        "(is the engine overloaded, or DOCKER_HOST / docker.host not a Docker engine?)",
        kind="deadline",
    )


def _as_requests_error(exc: Exception, where: str) -> Exception:
    """What ``requests`` raises for a body that broke off while read whole (an OSError, which every
    caller of the engine handles), instead of urllib3's own exceptions."""
    if isinstance(exc, requests.RequestException):
        return exc
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return requests.exceptions.ConnectionError(f"{where}: the engine went silent: {exc}")
    return requests.exceptions.ChunkedEncodingError(f"{where}: the answer broke off: {exc}")


def _bounded_send(self: APIClient, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
    """``requests.Session.send`` with the answer read here, bounded (see the module's docstring)."""
    if kwargs.get("stream"):
        return _session_send(self, request, **kwargs)
    where = _where(request)
    deadline_s = _deadline_for(self, kwargs.get("timeout"))
    started = time.monotonic()
    ledger = _ConnectionLedger()
    token = _ledger.set(ledger)
    got = 0
    watch = Watchdog(ledger, deadline_s=deadline_s, cancel=None, started=started)
    try:
        with watch:
            try:
                response = _session_send(self, request, **{**kwargs, "stream": True})
            except requests.RequestException:
                if watch.expired() == "deadline" and deadline_s is not None:
                    raise refused_slow(where, deadline_s, 0) from None
                raise
            try:
                declared = response.headers.get("content-length", "")
                if declared.strip().isdigit() and int(declared) > ENGINE_LIMIT:
                    raise refused_size(where)
                parts: list[bytes] = []
                while True:
                    try:
                        chunk = response.raw.read1(_CHUNK, decode_content=True)
                    except Exception as exc:  # the watchdog cut the socket, or the engine broke the answer
                        if watch.expired() == "deadline" and deadline_s is not None:
                            raise refused_slow(where, deadline_s, got) from None
                        raise _as_requests_error(exc, where) from exc
                    if not chunk:
                        if watch.expired() == "deadline" and deadline_s is not None:
                            raise refused_slow(where, deadline_s, got)
                        break
                    got += len(chunk)
                    if got > ENGINE_LIMIT:
                        raise refused_size(where)
                    parts.append(chunk)
                    if watch.expired() == "deadline" and deadline_s is not None:
                        raise refused_slow(where, deadline_s, got)
            except BaseException:
                response.close()
                raise
    finally:
        _ledger.reset(token)
    response._content = b"".join(parts)
    response._content_consumed = True  # type: ignore[attr-defined]
    response.raw.release_conn()
    _refuse_deep(response._content, where)
    return response


def _refuse_deep(content: bytes, where: str) -> None:
    """A JSON answer nested past :data:`MAX_DEPTH` (a few KB can hold 20,000 levels) is refused here,
    before docker-py's ``json.loads`` meets it with a RecursionError."""
    if content.count(b"[") + content.count(b"{") <= MAX_DEPTH or content.lstrip()[:1] not in (b"[", b"{"):
        return
    try:
        loads_outside(content, where)
    except OutsideJSONError as exc:
        if exc.kind == "depth":
            raise EngineAnswerRefused(exc.message, kind="depth") from None


def install() -> None:
    """Bound every docker-py client's answers (idempotent; done when this module is imported)."""
    urllib3.connectionpool.HTTPConnectionPool._get_conn = _get_conn_recorded  # type: ignore[method-assign]
    APIClient.send = _bounded_send


install()
