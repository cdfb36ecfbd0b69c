"""HTTP readiness of a vLLM server: ``GET /health`` answers 200, then ``GET /v1/models`` lists the model.

The port only opens after engine initialisation, so connection errors are the normal state while a
server loads. Polling is fast (every 50 ms by default) so that READY shows within half a second of
``/health`` first answering.

A probe never dies: whatever goes wrong while it waits (an answer no parser should read, a bug) ends the
wait with a result that says what, so the launch that waits on it fails with that message instead of
staying "starting" for ever.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llm_dyno.core.endpoint import KeyReference
from llm_dyno.core.errors import DynoError
from llm_dyno.core.httpbounds import SMALL_LIMIT, BoundsError, get_bounded
from llm_dyno.core.httpclient import http_client
from llm_dyno.core.jsontext import OutsideJSONError, loads_outside

if TYPE_CHECKING:
    import httpx


def _key_now(key: KeyReference | None) -> str | None:
    """The key to send, read now; an unset one sends none (the answer, 401, then says why)."""
    try:
        return key.resolve() if key is not None else None
    except DynoError:
        return None


@dataclass(frozen=True)
class ReadinessResult:
    """The outcome of waiting: ready or not, and the models the server lists."""

    ready: bool
    models: tuple[str, ...] = ()
    health_ok_at: float | None = None  # time.time() when /health first answered 200
    error: str = ""


class ReadinessProbe:
    """Polls a server until it is ready, cancelled, or the deadline passes. One use per instance."""

    def __init__(
        self,
        base_url: str,
        *,
        key: KeyReference | None = None,
        interval_s: float = 0.05,
        request_timeout_s: float = 2.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key  # resolved when the polling starts, never kept
        self.interval_s = min(interval_s, 0.1)
        self.request_timeout_s = request_timeout_s
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop waiting (from any thread); :meth:`wait` returns not ready soon after."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def wait(self, timeout_s: float | None = None) -> ReadinessResult:
        """Block until /health is 200 and /v1/models answers; returns the result (not ready, with the
        error, for anything that went wrong: it never raises)."""
        try:
            return self._wait(timeout_s)
        except Exception as exc:  # the thread that waits must end with a message, not die
            error = f"the readiness check failed: {type(exc).__name__}: {exc}"
            return ReadinessResult(False, (), None, error)

    def _wait(self, timeout_s: float | None) -> ReadinessResult:
        import httpx  # here, not at module level: the window imports the runtimes at start-up

        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        health_ok_at: float | None = None
        last_error = ""
        # One client, no keep-alive surprises: a fresh connection per poll while the port is closed.
        with http_client(api_key=_key_now(self.key), timeout_s=self.request_timeout_s) as client:
            while not self._cancel.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    return ReadinessResult(False, (), health_ok_at, last_error or "timed out")
                try:
                    if health_ok_at is None:
                        status, _ = self._get(client, "/health")
                        if status == 200:
                            health_ok_at = time.time()
                        else:
                            last_error = f"/health answered {status}"
                    if health_ok_at is not None:
                        status, body = self._get(client, "/v1/models")
                        if status == 200:
                            return ReadinessResult(True, model_ids(body), health_ok_at)
                        last_error = f"/v1/models answered {status}"
                        if status in (401, 403):
                            return ReadinessResult(False, (), health_ok_at, last_error + " (API key?)")
                except httpx.HTTPError as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
                except (BoundsError, ModelsError) as exc:
                    # the server answers, but not as vLLM does: say so instead of waiting for ever
                    return ReadinessResult(False, (), health_ok_at, exc.message)
                self._cancel.wait(self.interval_s)
        return ReadinessResult(False, (), health_ok_at, "cancelled")

    def _get(self, client: httpx.Client, path: str) -> tuple[int, bytes]:
        return get_bounded(
            client, f"{self.base_url}{path}", limit=SMALL_LIMIT, deadline_s=self.request_timeout_s * 2
        )


class ModelsError(BoundsError):
    """``/v1/models`` answered 200 with something other than an OpenAI model list."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="shape", hint="is this an OpenAI-compatible server?")


def model_ids(body: bytes) -> tuple[str, ...]:
    """The model ids of a ``/v1/models`` answer (``{"data": [{"id": …}, …]}``); raises
    :class:`ModelsError` for any other shape."""
    try:
        data: Any = loads_outside(body, "/v1/models")
    except OutsideJSONError as exc:
        if exc.kind == "depth":
            raise ModelsError(exc.message) from None
        raise ModelsError(f"/v1/models did not answer JSON: {body[:80]!r}") from None
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        raise ModelsError(
            f"/v1/models answered a {type(data).__name__} without a 'data' list, not an OpenAI model list"
        )
    return tuple(str(m.get("id", "")) for m in listed if isinstance(m, dict))
