"""Whether a streamed answer's token count can be true: the one check the bench and load runners share.

A server's ``usage.completion_tokens`` is its word, not a measurement. Two facts bound it:

* a completion is never longer than the request's ``max_tokens`` (vLLM stops at it exactly, spec
  decoding included: drafts past the limit are discarded, never streamed or counted);
* every token is streamed in some event that carries a choice. vLLM sends one event per step (a
  step yields at most ``num_speculative_tokens + 1`` tokens, or ``--stream-interval`` tokens batched),
  and a token whose text is empty (a special token) still has its event (recorded:
  tests/fixtures/sse/chat_special_tokens_only.sse, 24 tokens, no text, 8 events). So a count above
  what the streamed text and events can hold is invented.

A run whose count breaks either bound has no figure that can be trusted (its TPS is that count over
the time): the runners mark it with the reason and keep it out of every statistic.
"""

from __future__ import annotations

from collections.abc import Mapping

from llm_dyno.core.bench.client import StreamOutcome

# Tokens one streamed event can carry with no text of its own: far above any spec-decode step
# (num_speculative_tokens + 1) or --stream-interval a server is run with.
MAX_TOKENS_PER_EVENT = 128
# A token's text is at least one byte, and a character is at most 4 bytes of UTF-8: the streamed
# characters bound the tokens that had text to 4 each.
MAX_TOKENS_PER_CHAR = 4


def max_tokens_of(body: Mapping[str, object]) -> int | None:
    """The ``max_tokens`` a request body really sent (a suite's extra body may set its own); None
    when it sent none."""
    limit = body.get("max_tokens")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


def impossible_figures(outcome: StreamOutcome, max_tokens: int | None) -> str | None:
    """Why ``outcome``'s token count cannot be true for a request of ``max_tokens`` (None: no limit
    sent), or None when it can. The reason names the claim and the bound it breaks."""
    tokens = outcome.completion_tokens
    if max_tokens is not None and tokens > max_tokens:
        return (
            f"the server claims {tokens:,} completion tokens for max_tokens {max_tokens:,}; "
            "a completion is never longer than its max_tokens"
        )
    events = len(outcome.event_times_s)
    if tokens > 0 and events == 0:
        return f"the server claims {tokens:,} completion tokens but streamed no choice at all"
    text = outcome.content_chars + outcome.reasoning_chars
    bound = MAX_TOKENS_PER_CHAR * text + MAX_TOKENS_PER_EVENT * events
    if tokens > bound:
        return (
            f"the server claims {tokens:,} completion tokens but streamed {text:,} characters in "
            f"{events:,} events, room for at most {bound:,}"
        )
    return None
