"""Reasoning-aware latency of one run: with a reasoning parser the server streams the model's thinking
as ``reasoning`` deltas (``reasoning_content`` before vLLM 0.9) and the answer as ``content``, and
counts the thinking apart (``usage.completion_tokens_details.reasoning_tokens``). TTFT then is the first
of either; what a user waits for is the first content token."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_dyno.core.records import Record

if TYPE_CHECKING:  # a stored result is read without the HTTP client
    from llm_dyno.core.bench.client import StreamOutcome


class ReasoningTimes(Record):
    """When the first reasoning and the first content text arrived (seconds after the request was sent),
    and the completion's tokens split into reasoning and content (None: the server did not count)."""

    first_reasoning_s: float | None = None
    first_content_s: float | None = None
    reasoning_tokens: int | None = None
    content_tokens: int | None = None

    @staticmethod
    def of(outcome: StreamOutcome) -> ReasoningTimes | None:
        """The run's reasoning times, or None when it streamed no reasoning and the server counted none."""
        if outcome.first_reasoning_s is None and not outcome.reasoning_tokens:
            return None
        thinking = outcome.reasoning_tokens
        return ReasoningTimes(
            first_reasoning_s=outcome.first_reasoning_s,
            first_content_s=outcome.first_content_s,
            reasoning_tokens=thinking,
            content_tokens=None if thinking is None else max(0, outcome.completion_tokens - thinking),
        )

    def describe(self) -> str:
        """``content first 0.412s, 120 reasoning / 80 content tokens``."""
        first = "—" if self.first_content_s is None else f"{self.first_content_s:.3f}s"
        counts = (
            f", {self.reasoning_tokens} reasoning / {self.content_tokens} content tokens"
            if self.reasoning_tokens is not None
            else ""
        )
        return f"content first {first}{counts}"
