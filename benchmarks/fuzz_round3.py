"""Issue 29's round-3 classes not covered by benchmarks/fuzz_trust.py's other targets, as fuzz targets
(added to its targets), each through the app's own parser:

- ``engine_streams`` (class 9, streams): Docker log / exec / pull streams, multiplexed or raw, with
  frames whose header claims any size (up to 4 GiB), headers broken off, long runs without a newline
  and binary → :func:`~llm_dyno.core.runtime.stream_bounds.bounded_lines` gives lines of at most
  ``MAX_LINE_CHARS`` (plus the cut note) with no line end inside, holding no more than the size cap,
  or refuses the stream at the cap (``EngineAnswerRefused``, kind ``size``)
- ``yaml_keys`` (class 6): YAML mappings with duplicate keys, one or two ``<<:`` merge keys, merges of
  one mapping or of a list of them → ``ProfileError`` naming a line when a key is duplicated, or the
  mapping the merge-key rule gives (own keys first, then the earlier merged mapping before the later)
- ``env_names`` (class 4): compose services whose environment names start with ``-``, hold ``=`` or
  spaces, are empty or any text, in list and mapping form → refused (``DynoError``), or a profile whose
  every environment name is one ``env`` and ``docker`` read as a name, never as an option
- ``sanitize_bidi`` (class 11): any text with bidi embedding, override and isolate controls,
  direction marks, escape sequences and C0/C1 controls → :func:`~llm_dyno.core.textsafe.sanitize`
  leaves none of them (text and bytes alike)
"""

from __future__ import annotations

import io
import struct
from typing import Any

from hypothesis import strategies as st

from llm_dyno.core.errors import DynoError, ProfileError
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import env_name_problem
from llm_dyno.core.profiles.yamlio import load_with_lines
from llm_dyno.core.runtime.docker_bounds import EngineAnswerRefused
from llm_dyno.core.runtime.lines import MAX_LINE_CHARS, cut_note
from llm_dyno.core.runtime.stream_bounds import StreamBounds, bounded_lines
from llm_dyno.core.textsafe import sanitize, sanitize_bytes

# ---- engine_streams -------------------------------------------------------------------------------


@st.composite
def _stream(draw: st.DrawFn) -> tuple[bytes, bool, int]:
    multiplexed = draw(st.booleans())
    out = b""
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            payload = b"x" * draw(st.integers(0, 3 * MAX_LINE_CHARS))
        elif kind == 1:
            payload = draw(st.sampled_from([b"\n", b"\r", b"\r\n", b"ok\n", b"\xe2\x80"]))
        else:
            payload = draw(st.binary(max_size=200))
        if multiplexed:
            claimed = draw(st.sampled_from([len(payload), len(payload), 0, 0xFFFFFFFF, len(payload) + 7]))
            out += struct.pack(">BxxxL", draw(st.sampled_from([1, 2, 0, 9])), claimed)
        out += payload
    if multiplexed and draw(st.booleans()):
        out += b"\x01\x00\x00"  # a header broken off
    return out, multiplexed, draw(st.integers(0, 4 * MAX_LINE_CHARS))


def check_engine_streams(case: tuple[bytes, bool, int]) -> None:
    data, multiplexed, cap = case
    bounds = StreamBounds("fuzz stream", max_bytes=cap)
    try:
        lines = list(bounded_lines(io.BytesIO(data).read, None, bounds, multiplexed=multiplexed))
    except EngineAnswerRefused as exc:
        if exc.kind != "size":
            raise AssertionError(f"a stream read from memory refused for {exc.kind}: {exc.message}") from None
        raise
    longest = MAX_LINE_CHARS + len(cut_note(10**12))
    for line in lines:
        if len(line) > longest:
            raise AssertionError(f"a line of {len(line):,} characters was kept")
        if "\r" in line or "\n" in line:
            raise AssertionError("a line end inside a line")
    if sum(len(line.encode("utf-8", "surrogatepass")) for line in lines) > 3 * cap + longest * len(lines):
        raise AssertionError("more was kept than the size cap lets in")


# ---- yaml_keys ------------------------------------------------------------------------------------

_KEYS = ["a", "b", "c"]


@st.composite
def _merge_yaml(draw: st.DrawFn) -> tuple[str, list[list[tuple[str, int]]], list[int], list[tuple[str, int]]]:
    """Two anchored mappings, and a mapping that merges some of them and has its own keys."""
    anchored = [
        draw(st.lists(st.tuples(st.sampled_from(_KEYS), st.integers(0, 9)), max_size=3)) for _ in "xy"
    ]
    merges = draw(st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=2), max_size=2))
    own = draw(st.lists(st.tuples(st.sampled_from(_KEYS), st.integers(10, 19)), max_size=3))
    lines = []
    for i, pairs in enumerate(anchored):
        lines.append(f"m{i}: &m{i}")
        lines += [f"  {k}: {v}" for k, v in pairs] or ["  {}"]
        if not pairs:
            lines[-2:] = [f"m{i}: &m{i} {{}}"]
    lines.append("svc:")
    for merge in merges:
        refs = [f"*m{i}" for i in merge]
        lines.append(f"  <<: {refs[0]}" if len(refs) == 1 else f"  <<: [{', '.join(refs)}]")
    lines += [f"  {k}: {v}" for k, v in own]
    if not merges and not own:
        lines[-1] = "svc: {}"
    flat = [i for merge in merges for i in merge]
    return "\n".join(lines) + "\n", anchored, flat if len(merges) <= 1 else [-1], own


def _duplicated(pairs: list[tuple[str, int]]) -> bool:
    keys = [k for k, _ in pairs]
    return len(keys) != len(set(keys))


def check_yaml_keys(case: tuple[str, list[list[tuple[str, int]]], list[int], list[tuple[str, int]]]) -> None:
    text, anchored, merged, own = case
    duplicate = any(_duplicated(p) for p in anchored) or _duplicated(own) or merged == [-1]
    try:
        data, _lines = load_with_lines(text, "fuzz.yaml")
    except ProfileError as exc:
        if not duplicate:
            raise AssertionError(f"a file without a duplicate key was refused: {exc}\n{text}") from None
        if exc.where is None or exc.where.line is None:
            raise AssertionError(f"a duplicate key refused without its line: {exc}") from None
        raise
    if duplicate:
        raise AssertionError(f"a duplicate key (or a second '<<') was accepted:\n{text}")
    expected: dict[str, Any] = {}
    for i in reversed(merged):  # the earlier merged mapping wins: applied last
        expected.update(dict(anchored[i]))
    expected.update(dict(own))
    if data["svc"] != expected:
        raise AssertionError(f"merged as {data['svc']}, the merge-key rule gives {expected}:\n{text}")


# ---- env_names ------------------------------------------------------------------------------------

_NAMES = st.one_of(
    st.sampled_from(
        ["-S", "-", "--split-string", "A-B", "A=B", "=x", "", " X", "a b", "X.Y", "[a]", "1X", "é"]
    ),
    st.sampled_from(["HF_HOME", "VLLM_LOGGING_LEVEL", "CUDA_VISIBLE_DEVICES"]),
    st.text(max_size=8),
)


@st.composite
def _compose_env(draw: st.DrawFn) -> str:
    names = draw(st.lists(_NAMES, min_size=1, max_size=4))
    listed = draw(st.booleans())
    body = ["services:", "  vllm:", "    image: vllm/vllm-openai:v0.11.0", '    command: ["--model", "m"]']
    body.append("    environment:")
    for name in names:
        quoted = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if listed:
            body.append(f'      - {quoted[:-1]}=v"')
        else:
            body.append(f"      {quoted}: v")
    return "\n".join(body) + "\n"


def check_env_names(text: str) -> None:
    result = import_text(text, source="compose.yaml")  # ImportFailed (a DynoError): refused
    for name in result.profile.env:
        if env_name_problem(name) is not None or name.startswith("-") or "=" in name:
            raise AssertionError(f"an environment name {name!r} was imported:\n{text}")


# ---- sanitize_bidi --------------------------------------------------------------------------------

_UNSAFE = (
    [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
    + [
        "\u200e",
        "\u200f",
        "\u061c",
        "\x1b",
        "\x1b[31m",
        "\x1b]52;c;eA==\x07",
        "\x9b2J",
        "\x07",
        "\x00",
        "\x85",
    ]
)
_TEXTS = st.lists(st.one_of(st.sampled_from(_UNSAFE), st.text(max_size=6)), max_size=12).map("".join)
_LEFT = set(_UNSAFE[:12]) | {"\x1b", "\x9b", "\x07", "\x00", "\x85"}


def check_sanitize_bidi(text: str) -> None:
    shown = sanitize(text)
    if any(c in _LEFT or (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in shown):
        raise AssertionError(f"sanitize left a control in {shown!r} (from {text!r})")
    raw = sanitize_bytes(text.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")
    if any(c in _LEFT or (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in raw):
        raise AssertionError(f"sanitize_bytes left a control in {raw!r} (from {text!r})")


TARGETS = {
    "engine_streams": (_stream, check_engine_streams, (EngineAnswerRefused,)),
    "yaml_keys": (_merge_yaml, check_yaml_keys, (ProfileError,)),
    "env_names": (_compose_env, check_env_names, (DynoError,)),
    "sanitize_bidi": (lambda: _TEXTS, check_sanitize_bidi, ()),
}
