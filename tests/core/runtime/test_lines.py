"""LineSplitter: byte chunks in, lines out (\\n, \\r\\n, tqdm's bare \\r, split UTF-8)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from llm_dyno.core.runtime.lines import LineSplitter


def split_all(chunks: list[bytes]) -> list[str]:
    splitter = LineSplitter()
    out: list[str] = []
    for chunk in chunks:
        out += splitter.feed(chunk)
    return out + splitter.flush()


def test_line_endings() -> None:
    assert split_all([b"a\nb\r\nc\rd"]) == ["a", "b", "c", "d"]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    assert split_all([b"a\r", b"\nb\n"]) == ["a", "b"]


def test_tqdm_redraws_become_lines() -> None:
    data = b"Loading: 0% | 0/3\rLoading: 33% | 1/3\rLoading: 100% | 3/3\n\nnext\n"
    assert split_all([data]) == ["Loading: 0% | 0/3", "Loading: 33% | 1/3", "Loading: 100% | 3/3", "next"]


def test_utf8_split_inside_a_character() -> None:
    data = "Capturing █ 100%|██████████|\n".encode()
    for cut in range(1, len(data)):
        assert split_all([data[:cut], data[cut:]]) == ["Capturing █ 100%|██████████|"]


def test_partial_line_waits_then_flushes() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"par") == []
    assert splitter.feed(b"tial") == []
    assert splitter.flush() == ["partial"]
    assert splitter.flush() == []


def test_invalid_bytes_do_not_raise() -> None:
    assert split_all([b"bad \xff byte\n"]) == ["bad \ufffd byte"]


@given(st.lists(st.sampled_from(["a", "é", "█", "\n", "\r", "\r\n", " "]), max_size=40), st.data())
def test_any_chunking_gives_the_same_lines(parts: list[str], data: st.DataObject) -> None:
    blob = "".join(parts).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=6)))
    chunks = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)], strict=True)]
    assert split_all(chunks) == split_all([blob])


def test_a_real_log_file_in_small_chunks() -> None:
    path = Path(__file__).parents[2] / "fixtures" / "logs" / "vllm_cpu_startup_ready_sigterm.log"
    blob = path.read_bytes()
    whole = split_all([blob])
    assert split_all([blob[i : i + 7] for i in range(0, len(blob), 7)]) == whole
    assert any(line.startswith("Loading safetensors checkpoint shards: 100%") for line in whole)
