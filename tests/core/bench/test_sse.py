"""SSE parsing on recorded vLLM streams, split at every possible place, plus the edge cases."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_dyno.core.bench.sse import SSEDataParser
from tests.core.bench.replay import fixture
from tests.support.sse_reference import SSEEvent, SSEParser

RECORDED = ["chat_length.sse", "chat_special_tokens_only.sse", "completions_length.sse", "chat_no_usage.sse"]


def parse_all(data: bytes, cuts: list[int]) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    last = 0
    for cut in sorted(set(cuts)):
        events += parser.feed(data[last:cut])
        last = cut
    events += parser.feed(data[last:])
    return events + parser.close()


def test_recorded_chat_stream_parses_into_chunks_usage_and_done() -> None:
    events = parse_all(fixture("chat_length.sse"), [])
    assert events[-1].data == "[DONE]"
    objects = [json.loads(e.data) for e in events[:-1]]
    assert objects[-1]["usage"]["completion_tokens"] == 24
    assert all(o["object"] == "chat.completion.chunk" for o in objects)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(RECORDED), cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=40))
def test_splitting_anywhere_gives_the_same_events(name: str, cuts: list[int]) -> None:
    data = fixture(name)
    assert parse_all(data, cuts) == parse_all(data, [])


def test_every_single_byte_split() -> None:
    data = fixture("completions_length.sse")
    assert parse_all(data, list(range(len(data)))) == parse_all(data, [])


def test_crlf_and_cr_line_endings_and_split_between_cr_and_lf() -> None:
    data = b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\rdata: [DONE]\r\n\r\n'
    want = [SSEEvent('{"a": 1}'), SSEEvent('{"b": 2}'), SSEEvent("[DONE]")]
    assert parse_all(data, []) == want
    assert parse_all(data, [15, 16, 17]) == want  # cut inside "\r\n"


def test_comments_multiline_data_event_names_and_no_space() -> None:
    data = b": keep-alive\n\nevent: error\ndata:line1\ndata: line2\nid: 3\n\n"
    assert parse_all(data, []) == [SSEEvent("line1\nline2", "error")]


def test_utf8_split_inside_a_character() -> None:
    data = 'data: {"c": "é😀"}\n\n'.encode()
    assert parse_all(data, list(range(len(data)))) == [SSEEvent('{"c": "é😀"}')]


def test_final_event_without_blank_line_is_delivered_on_close() -> None:
    assert parse_all(b"data: [DONE]\n", []) == [SSEEvent("[DONE]")]


def test_truncated_last_line_is_dropped() -> None:
    assert parse_all(b'data: {"a": 1}\n\ndata: {"choi', []) == [SSEEvent('{"a": 1}')]


# ---- the client's bytes parser gives the same data as the reference parser ----------------------
def data_all(data: bytes, cuts: list[int]) -> list[bytes]:
    parser = SSEDataParser()
    out: list[bytes] = []
    last = 0
    for cut in sorted(set(cuts)):
        out += parser.feed(data[last:cut])
        last = cut
    out += parser.feed(data[last:])
    return out + parser.close()


EDGE_CASES = [
    b'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\rdata: [DONE]\r\n\r\n',
    b": keep-alive\n\nevent: error\ndata:line1\ndata: line2\nid: 3\n\ndata\n\n",
    'data: {"c": "é😀"}\n\n'.encode(),
    b"data: [DONE]\n",
    b"data: [DONE]\r",
    b'data: {"a": 1}\n\ndata: {"choi',
]


@settings(max_examples=150, deadline=None)
@given(
    data=st.sampled_from([fixture(n) for n in RECORDED] + EDGE_CASES),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=40),
)
def test_bytes_parser_matches_the_reference_parser(data: bytes, cuts: list[int]) -> None:
    assert data_all(data, cuts) == [e.data.encode() for e in parse_all(data, [])]


def test_bytes_parser_every_single_byte_split() -> None:
    for data in [fixture("chat_length.sse"), *EDGE_CASES]:
        assert data_all(data, list(range(len(data)))) == [e.data.encode() for e in parse_all(data, [])]
