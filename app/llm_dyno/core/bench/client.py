"""The benchmark's HTTP client: one httpx client with keep-alive, streamed completions, timings.

Timing follows the community's bench.sh: the clock starts just before the request is sent (after
httpx has built it), TTFT is the first chunk that carries content or reasoning text, wall time ends
when ``[DONE]`` arrives. Tokens come from the final ``usage`` object, never from chunk counts (one
chunk carries several tokens with speculative decoding).

``[DONE]`` ends a request: nothing after it is parsed, and the rest of the body gets
``AFTER_DONE_S`` before the connection is closed (a server that holds it open loses nothing).

The client must not cost throughput (benchmarks/client_overhead.py holds it to 0.99 of a bare stdlib
client), so the per-chunk path is lean: raw body bytes (no decoder layer), a bytes SSE parser, and the
common chunk of a stream (one choice, ``"finish_reason":null``, plain text) is read by one compiled
pattern; any other chunk, or any doubt, goes through ``loads_outside`` (core/jsontext.py). This matters
because a stream often arrives in bursts: the wall time then ends when the client has worked through
the burst.

Every read is bounded (core/httpbounds.py): an event or line over 1 MiB, more events than the
request's ``max_tokens`` can explain, a stream past its deadline, or a chunk of the wrong shape
(``delta`` a string, ``content`` a number) ends that request with a :class:`StreamError`; a
cancel closes the connection within a tenth of a second even while the server is silent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llm_dyno.core.bench.latency import LatencySummary
from llm_dyno.core.bench.request_acceptance import RequestAcceptance
from llm_dyno.core.bench.sse import SSEDataParser, SSELimitError
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.httpbounds import (
    SMALL_LIMIT,
    BoundsError,
    RequestCancelled,
    Watchdog,
    get_bounded,
    read_body,
    send_bounded,
)
from llm_dyno.core.httpclient import http_client
from llm_dyno.core.jsontext import OutsideJSONError, loads_outside, valid_text

# How many events a request of ``max_tokens`` may take: each text-carrying chunk carries at least one
# token; role, usage and finish chunks add a few. A stream past this bound is not finishing.
EVENT_SLACK = 64
# A stream without any deadline of its own (the suite sets one) still ends within this time.
DEFAULT_DEADLINE_S = 900.0
# After [DONE] the answer is complete: the rest of the body (vLLM's chunked terminator, at once) is read
# for this long at most, so the connection can go back to the pool; a body held open past it is closed.
AFTER_DONE_S = 0.5

if TYPE_CHECKING:
    import httpx  # imported where a client is made: results and ceilings load without it


# No request asks for near this many tokens: a count above it (or below 0) is a malformed answer
MAX_COUNTED_TOKENS = 10_000_000


class StreamError(DynoError):
    """A streamed request failed: HTTP error status, connection lost, error event, missing usage."""

    def __init__(self, message: str, *, kind: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind  # "http", "connection", "server", "protocol"


class StreamCancelled(DynoError):
    """The stream was closed because cancellation was requested."""


@dataclass(frozen=True)
class StreamOutcome:
    """What one streamed request measured."""

    ttft_s: float | None
    wall_s: float
    completion_tokens: int
    prompt_tokens: int | None
    finish_reason: str | None
    chunks: int
    latency: LatencySummary | None
    content_chars: int
    reasoning_chars: int
    saw_done: bool
    # arrival of every event that carries a choice, seconds after the request was sent: what
    # `vllm bench serve` times (TTFT, ITL, E2E; see llm_dyno.core.bench.peer)
    event_times_s: tuple[float, ...] = ()
    request_acceptance: RequestAcceptance | None = None  # with --per-request-spec-decode-metrics
    # reasoning-aware latency (a reasoning parser splits the two): first of each kind of text, seconds
    first_reasoning_s: float | None = None
    first_content_s: float | None = None
    text: str = ""  # the answer's content (a multi-turn workload sends it back as the assistant's turn)
    reasoning_tokens: int | None = None  # usage.completion_tokens_details.reasoning_tokens
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens


class BenchClient:
    """Streams completions from one OpenAI-compatible server (``endpoint``) over a single keep-alive
    connection, sending the endpoint's key (:class:`~llm_dyno.core.endpoint.MissingSecret` here when it
    cannot be resolved: every request would get 401).

    ``transport`` lets tests substitute an ``httpx.MockTransport``.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout_s: float = 600.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = endpoint.url.rstrip("/")
        key = endpoint.api_key()
        self._client = http_client(self.base_url, api_key=key, timeout_s=timeout_s, transport=transport)

    @property
    def http(self) -> httpx.Client:
        """The underlying keep-alive client (for /metrics scrapes over the same pool)."""
        return self._client

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> BenchClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_text(self, path: str, timeout_s: float = 10.0) -> str:
        """GET a path (at most 1 MiB, within ``timeout_s`` overall) and return its body; raises
        :class:`StreamError` on failure."""
        import httpx

        try:
            status, body = get_bounded(self._client, path, limit=SMALL_LIMIT, deadline_s=timeout_s)
        except httpx.HTTPError as exc:
            raise StreamError(f"GET {path} failed: {exc}", kind="connection") from None
        except BoundsError as exc:
            raise StreamError(exc.message, kind="protocol", hint=exc.hint) from None
        if status >= 400:
            raise StreamError(f"GET {path} answered HTTP {status}", kind="http")
        return body.decode("utf-8", "replace")

    def get_json(self, path: str, timeout_s: float = 10.0) -> Any:
        """GET a path and decode its JSON body."""
        text = self.get_text(path, timeout_s)
        try:
            return loads_outside(text, f"GET {path}")
        except OutsideJSONError as exc:
            raise StreamError(exc.message, kind="protocol", hint=exc.hint) from None

    def stream(
        self,
        path: str,
        body: dict[str, Any],
        cancel: threading.Event | None = None,
        *,
        deadline_s: float | None = None,
    ) -> StreamOutcome:
        """POST ``body`` to ``path`` with streaming, read it to the end and time it.

        The whole request must finish within ``deadline_s`` (default 900 s); ``cancel`` ends it within
        a tenth of a second (:class:`StreamCancelled`)."""
        import httpx

        deadline = DEFAULT_DEADLINE_S if deadline_s is None else deadline_s
        tokens = body.get("max_tokens")
        max_events = (tokens if isinstance(tokens, int) and tokens > 0 else 100_000) + EVENT_SLACK
        watchdog: Watchdog | None = None
        try:
            try:
                request = self._client.build_request("POST", path, json=body)
            except UnicodeEncodeError as exc:  # e.g. a --model whose undecodable bytes Python kept
                bad = exc.object[max(0, exc.start - 20) : exc.end + 20] if isinstance(exc.object, str) else ""
                raise StreamError(
                    f"the request cannot be sent: its text is not valid UTF-8 near {valid_text(bad)!r}",
                    kind="protocol",
                    hint="check the model name and the suite's prompts for bytes that are not UTF-8",
                ) from None
            t0 = time.monotonic()  # like a bare client: building the request is not the server's time
            try:  # the same deadline and cancel while the server has not answered yet
                response = send_bounded(
                    self._client, request, url=path, deadline_s=deadline, cancel=cancel, started=t0
                )
            except RequestCancelled:
                raise StreamCancelled("benchmark cancelled") from None
            except BoundsError as exc:
                raise StreamError(f"the stream did not start: {exc.message}", kind="protocol") from None
            try:
                if response.status_code >= 400:
                    raw = read_body(response, path, limit=64 * 1024, deadline_s=10.0, what="error answer")
                    detail = _error_detail(raw)
                    raise StreamError(f"server answered HTTP {response.status_code}: {detail}", kind="http")
                with Watchdog(response, deadline_s=deadline, cancel=cancel, started=t0) as wd:
                    watchdog = wd
                    return _consume(response, t0, wd, max_events)
            finally:
                response.close()
        except httpx.HTTPError as exc:
            if watchdog is not None and watchdog.expired() is not None:
                raise _stopped(watchdog) from None  # the watchdog closed the socket
            raise StreamError(
                f"connection to {self.base_url} lost: {type(exc).__name__}: {exc}", kind="connection"
            ) from None
        except BoundsError as exc:
            raise StreamError(exc.message, kind="protocol") from None


def _stopped(watchdog: Watchdog) -> DynoError:
    if watchdog.reason == "cancelled":
        return StreamCancelled("benchmark cancelled")
    return StreamError(
        f"the stream did not finish within {watchdog.deadline_s:g} s; gave up",
        kind="protocol",
        hint="raise the suite's timeout_s for long answers on slow hardware",
    )


def _error_detail(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = loads_outside(text, "the error answer")
    except OutsideJSONError as exc:
        return exc.message if exc.kind == "depth" else text[:300] or "(empty body)"
    message = _error_message(data)
    return message if message is not None else text[:300]


def _error_message(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    err = data.get("error")
    if isinstance(err, dict):
        return str(err.get("message") or err)
    if isinstance(err, str):
        return err
    if data.get("object") == "error":
        return str(data.get("message"))
    return None


# The common chunk, in vLLM's compact JSON: one choice, plain text, no finish reason yet, the choices
# last. One compiled pattern reads it; anything else (other servers' spacing or field order, several
# choices, reasoning, usage, errors) is decoded in full, so the fast path never changes a result.
_PLAIN = re.compile(
    rb'"choices":\[\{"index":0,"delta":\{(?:"role":"assistant",)?"content":"((?:[^"\\]|\\.)*)"\},'
    rb'"logprobs":null,"finish_reason":null(?:,"\w+":null)*\}\]\}'
)


def _plain_content(data: bytes) -> str | None:
    """The text of a common chunk (see above), ``""`` for an empty one; None: decode it in full."""
    at = data.find(b'"choices":[{')
    m = _PLAIN.match(data, at) if at != -1 else None
    if m is None or m.end() != len(data):
        return None
    # the pattern covers the rest of the object; usage or an error could only sit before it
    if data.find(b'"usage"', 0, at) != -1 or data.find(b'"error"', 0, at) != -1:
        return None
    text = m.group(1)
    try:
        # an escape (e.g. "\t", "\u00e9") needs the JSON string rules; plain UTF-8 does not. One string
        # literal cannot nest, and only its length is used, so json.loads is safe here (a lone
        # surrogate counts one character).
        return str(json.loads(b'"' + text + b'"')) if b"\\" in text else text.decode()
    except ValueError:
        return None


class _Reader:
    """Accumulates one stream's measurements as events arrive."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.first: float | None = None
        self.last_text: float | None = None
        self.gaps: list[float] = []
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.chunks = 0
        self.content = 0
        self.reasoning = 0
        self.done = False
        self.event_times: list[float] = []
        self.acceptance: RequestAcceptance | None = None
        self.first_reasoning: float | None = None
        self.first_content: float | None = None
        self.parts: list[str] = []

    def event(self, data: bytes, now: float) -> None:
        text = _plain_content(data)
        if text is not None:
            self.chunks += 1
            self.event_times.append(now - self.t0)
            if text:
                self.content += len(text)
                self.parts.append(text)
                self.first_content = self.first_content or now
                self._text_at(now)
            return
        if data == b"[DONE]" or data.strip() == b"[DONE]":
            self.done = True
            return
        try:
            obj = loads_outside(data, "a stream event")
        except OutsideJSONError as exc:
            if exc.kind == "depth":
                raise StreamError(exc.message, kind="protocol", hint=exc.hint) from None
            raise StreamError(f"undecodable stream event: {data[:200]!r}", kind="protocol") from None
        message = _error_message(obj)
        if message is not None:
            raise StreamError(f"server reported an error mid-stream: {message}", kind="server")
        if not isinstance(obj, dict):
            raise _shape("a chunk", "a JSON object", obj)
        self.chunks += 1
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
            self.acceptance = RequestAcceptance.of(obj) or self.acceptance
        elif usage is not None:
            raise _shape("'usage'", "an object", usage)
        had_text = False
        choices = obj.get("choices") or []
        if not isinstance(choices, list):
            raise _shape("'choices'", "a list", choices)
        if choices:
            self.event_times.append(now - self.t0)
        for choice in choices:
            if not isinstance(choice, dict):
                raise _shape("a choice", "an object", choice)
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise _shape("'delta'", "an object", delta)
            content = _text(delta.get("content") or choice.get("text"), "content")
            # newer vLLM: "reasoning"; older: "reasoning_content"
            reasoning = _text(delta.get("reasoning") or delta.get("reasoning_content"), "reasoning")
            if content or reasoning:
                had_text = True
                self.content += len(content)
                self.reasoning += len(reasoning)
                if content:
                    self.parts.append(content)
                    self.first_content = self.first_content or now
                if reasoning:
                    self.first_reasoning = self.first_reasoning or now
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])[:64]  # "stop", "length": a word, not a page
        if had_text:
            self._text_at(now)

    def _text_at(self, now: float) -> None:
        if self.first is None:
            self.first = now
        elif self.last_text is not None:
            self.gaps.append(now - self.last_text)
        self.last_text = now


def _shape(what: str, expected: str, got: Any) -> StreamError:
    shown = json.dumps(got)[:80] if isinstance(got, str | int | float | list | dict | None) else repr(got)
    return StreamError(
        f"malformed stream chunk: {what} should be {expected}, got {type(got).__name__} {shown}",
        kind="protocol",
        hint="is this an OpenAI-compatible server?",
    )


def _text(value: Any, name: str) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise _shape(f"'{name}'", "a string", value)
    return value


def _consume(response: httpx.Response, t0: float, watchdog: Watchdog, max_events: int) -> StreamOutcome:
    import httpx

    parser = SSEDataParser()
    reader = _Reader(t0)
    end: float | None = None
    events = 0
    # Raw bytes skip httpx's decoder and re-chunking layers; only a compressed body needs them.
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    chunks = response.iter_raw() if encoding == "identity" else response.iter_bytes()
    try:
        try:
            for raw in chunks:
                now = time.monotonic()
                if reader.done:
                    continue  # drain the chunked terminator so the connection goes back to the pool
                if watchdog.expired() is not None:
                    response.close()
                    raise _stopped(watchdog)
                datas = parser.feed(raw)
                events += len(datas)
                if events > max_events:
                    raise StreamError(
                        f"the server streamed more than {max_events:,} events without finishing "
                        f"(the request allows {max_events - EVENT_SLACK:,} tokens); gave up",
                        kind="protocol",
                    )
                for data in datas:
                    reader.event(data, now)
                    if reader.done:  # [DONE] ends the answer: nothing after it is read
                        end = now
                        watchdog.end_by(AFTER_DONE_S, reason="done")
                        break
        except httpx.HTTPError:
            if not reader.done:
                raise
            # the body went on after [DONE] and was cut: the answer was already complete
        if not reader.done and watchdog.expired() is not None:  # shut down: not the server's end
            raise _stopped(watchdog)
        if end is None:
            end = time.monotonic()
        if not reader.done:
            for data in parser.close():
                reader.event(data, end)
    except SSELimitError as exc:
        raise StreamError(str(exc), kind="protocol", hint="is this an OpenAI-compatible server?") from None
    if reader.usage is None:
        if not reader.done:
            raise StreamError(
                "the stream ended before it was complete (no usage, no [DONE])", kind="connection"
            )
        raise StreamError(
            "the server sent no usage object",
            kind="protocol",
            hint="the request asks for stream_options.include_usage; is this an OpenAI-compatible server?",
        )
    tokens = reader.usage.get("completion_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens <= MAX_COUNTED_TOKENS:
        what = f"is {str(tokens)[:40]}" if "completion_tokens" in reader.usage else "is missing"
        raise StreamError(f"malformed answer: usage.completion_tokens {what}, not a count", kind="protocol")
    prompt_tokens = reader.usage.get("prompt_tokens")
    if not isinstance(prompt_tokens, int) or not 0 <= prompt_tokens <= MAX_COUNTED_TOKENS:
        prompt_tokens = None  # none, or a figure nobody could have sent: not shown
    return StreamOutcome(
        ttft_s=None if reader.first is None else reader.first - t0,
        wall_s=end - t0,
        completion_tokens=tokens,
        prompt_tokens=prompt_tokens,
        finish_reason=reader.finish,
        chunks=reader.chunks,
        latency=LatencySummary.of(reader.gaps),
        content_chars=reader.content,
        reasoning_chars=reader.reasoning,
        saw_done=reader.done,
        event_times_s=tuple(reader.event_times),
        request_acceptance=reader.acceptance,
        first_reasoning_s=None if reader.first_reasoning is None else reader.first_reasoning - t0,
        first_content_s=None if reader.first_content is None else reader.first_content - t0,
        text="".join(reader.parts),
        reasoning_tokens=_detail(reader.usage, "completion_tokens_details", "reasoning_tokens"),
        cached_tokens=_detail(reader.usage, "prompt_tokens_details", "cached_tokens"),
    )


def _detail(usage: dict[str, Any], group: str, key: str) -> int | None:
    """A count inside one of usage's detail objects; None when absent or not a plausible count."""
    details = usage.get(group)
    value = details.get(key) if isinstance(details, dict) else None
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNTED_TOKENS
    return value if ok else None
