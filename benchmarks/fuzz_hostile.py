"""The hostile shapes of issue 12 as fuzz targets for benchmarks/fuzz_parsers.py (same runner, same
rules: each input parses or raises the module's documented user error; anything else is a crash).

- ``stream_chunks``: streamed completion chunks of any JSON shape (``delta`` a string, ``content`` a
  number, lists, nulls, huge numbers) through the bench client's reader → only ``StreamError``
- ``sse_bounds``: byte streams without blank lines, with endless lines, cut anywhere, into a parser
  bounded at 256 bytes → only ``SSELimitError``, and the buffers never pass the bound
- ``yaml_bounds``: YAML with anchors, aliases (recursive ones and bombs), deep nesting and long
  values → only ``ProfileError``, and no case takes more than a second of CPU
- ``models_answer``: ``/v1/models`` bodies of any shape → only ``ModelsError``
- ``secret_args``: profiles whose args hold a secret in any spelling → refused, or a plan whose
  argv, labels and command hold no secret value ("secrets found" counts the others as crashes)
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from hypothesis import strategies as st

from llm_dyno.core.bench.client import StreamError, _Reader
from llm_dyno.core.bench.sse import SSEDataParser, SSELimitError
from llm_dyno.core.errors import DynoError, ProfileError
from llm_dyno.core.profiles.model import DockerSettings, Profile, Runtime
from llm_dyno.core.profiles.yamlio import load_with_lines
from llm_dyno.core.runtime.docker_spec import plan_container
from llm_dyno.core.runtime.launch_spec import ContainerSpec
from llm_dyno.core.runtime.process_backend import ProcessRuntime
from llm_dyno.core.runtime.readiness import ModelsError, model_ids

# ---- stream chunks ----------------------------------------------------------------------------------

_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True),
    st.text(max_size=20),
)
_ANY_JSON = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _chunk(draw: st.DrawFn) -> bytes:
    """A chunk of the real shape with any field swapped for any JSON, or any JSON at all."""
    if draw(st.integers(0, 4)) == 0:
        return json.dumps(draw(_ANY_JSON)).encode()
    delta: Any = {"content": draw(st.one_of(st.text(max_size=10), _ANY_JSON))}
    if draw(st.booleans()):
        delta["reasoning"] = draw(_ANY_JSON)
    choice: Any = {"index": 0, "delta": draw(st.one_of(st.just(delta), _ANY_JSON)), "finish_reason": None}
    if draw(st.booleans()):
        choice["finish_reason"] = draw(_ANY_JSON)
    obj: Any = {"object": "chat.completion.chunk", "choices": draw(st.one_of(st.just([choice]), _ANY_JSON))}
    if draw(st.booleans()):
        obj["usage"] = draw(st.one_of(st.just({"completion_tokens": 3}), _ANY_JSON))
    if draw(st.integers(0, 9)) == 0:
        obj["error"] = draw(_ANY_JSON)
    return json.dumps(obj).encode()


def check_stream_chunks(chunks: list[bytes]) -> None:
    """The reader takes every chunk or raises StreamError for the first malformed one."""
    reader = _Reader(time.monotonic())
    for i, data in enumerate(chunks):
        reader.event(data, time.monotonic() + i)


# ---- SSE bounds -------------------------------------------------------------------------------------

SSE_BOUND = 256


@st.composite
def _hostile_stream(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    kind = draw(st.sampled_from(["no_blank", "long_line", "random", "mixed"]))
    if kind == "no_blank":
        raw = b"".join(
            b"data: " + draw(st.binary(max_size=60)).replace(b"\n", b"") + b"\n" for _ in range(20)
        )
    elif kind == "long_line":
        raw = b"data: " + b"y" * draw(st.integers(SSE_BOUND - 8, SSE_BOUND * 8))
    elif kind == "random":
        raw = draw(st.binary(max_size=2000))
    else:
        parts = draw(
            st.lists(st.sampled_from([b"data: x\n", b"\n", b"\r", b"\r\n", b":c\n", b"y" * 100]), max_size=60)
        )
        raw = b"".join(parts)
    return raw, draw(st.lists(st.integers(0, 10**6), max_size=30))


def check_sse_bounds(data: tuple[bytes, list[int]]) -> None:
    """Feed cut anywhere; only SSELimitError may end it, and nothing held passes the bound."""
    raw, cuts = data
    parser = SSEDataParser(max_event_bytes=SSE_BOUND)
    start = 0
    for cut in [*sorted({c % (len(raw) + 1) for c in cuts}), len(raw)]:
        parser.feed(raw[start:cut])
        start = cut
        held = len(parser._rest) + sum(len(d) for d in parser._data)
        if held > 2 * SSE_BOUND + 16:  # the line bound and the event bound, each checked on arrival
            raise AssertionError(f"the parser holds {held} bytes, over its bound {SSE_BOUND}")
    parser.close()


# ---- YAML bounds ------------------------------------------------------------------------------------


@st.composite
def _hostile_yaml(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["bomb", "recursive", "deep_flow", "deep_block", "long", "aliases", "mixed"]))
    if kind == "bomb":
        width, depth = draw(st.integers(2, 10)), draw(st.integers(2, 9))
        lines = [f"a0: &a0 [{','.join(['x'] * width)}]"]
        lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth)]
        return "\n".join(lines) + "\n"
    if kind == "recursive":
        return draw(
            st.sampled_from(["n: &n [*n]\n", "m: &m {k: *m}\n", "a: &a [1, [2, *a]]\n", "&r [*r, *r]\n"])
        )
    if kind == "deep_flow":
        n = draw(st.integers(1, 3000))
        return "k: " + "[" * n + "]" * n + "\n"
    if kind == "deep_block":
        n = draw(st.integers(1, 200))
        return "".join(" " * i + f"k{i}:\n" for i in range(n)) + " " * n + "v\n"
    if kind == "long":
        return "name: x\nnotes: " + "z" * draw(st.integers(60_000, 200_000)) + "\n"
    if kind == "aliases":
        names = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=8))
        out = [
            f"{n}{i}: &{n}{i} [{', '.join(f'*{m}{j}' for j, m in enumerate(names[:i]))}]"
            for i, n in enumerate(names)
        ]
        return "\n".join(out) + "\n"
    return draw(st.text(alphabet="&*[]{}:,- \nab01", max_size=300))


def check_yaml_bounds(text: str) -> None:
    """Only ProfileError may come out, within a second of CPU time (CPU, not wall: on a shared
    machine a wall-clock bound catches the neighbours' load, not a quadratic parser)."""
    started = time.process_time()
    try:
        load_with_lines(text, "fuzz.yaml")
    finally:
        spent = time.process_time() - started
        if spent > 1.0:
            raise AssertionError(f"one YAML file took {spent:.2f} s of CPU")


# ---- /v1/models -------------------------------------------------------------------------------------


def check_models_answer(body: bytes) -> None:
    """model_ids reads an OpenAI model list or raises ModelsError."""
    model_ids(body)


def _models_strategy() -> st.SearchStrategy[bytes]:
    shaped = st.fixed_dictionaries({"object": _ANY_JSON, "data": st.one_of(_ANY_JSON, st.lists(_ANY_JSON))})
    return st.one_of(
        _ANY_JSON.map(lambda v: json.dumps(v).encode()),
        shaped.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=100),
    )


# ---- secrets in args --------------------------------------------------------------------------------

SECRET = "sk-fuzz-secret-value-91"  # noqa: S105 - the value the fuzz hunts for
_SPELLINGS = ["--api-key", "--api_key", "--api-ke", "--api-k", "--hf-token", "--hf_token", "--hf-tok"]


@st.composite
def _secret_args(draw: st.DrawFn) -> tuple[tuple[str, ...], bool]:
    args: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        flag = draw(st.sampled_from([*_SPELLINGS, "--port", "--max-model-len", "--served-model-name"]))
        # a secret goes after a secret flag (its value anywhere else is the user's own choice)
        secrets = [SECRET, "${VLLM_API_KEY}", f"${{VLLM_API_KEY:-{SECRET}}}", "${HF_TOKEN}", "$VLLM_API_KEY"]
        value = draw(st.sampled_from(secrets if flag in _SPELLINGS else ["8000", "tiny", "${PORT}"]))
        args += [f"{flag}={value}"] if draw(st.booleans()) else [flag, value]
    return tuple(args), draw(st.booleans())


def check_secret_args(data: tuple[tuple[str, ...], bool]) -> None:
    """A profile holding the secret is refused; any plan that is made carries no secret value."""
    args, docker = data
    try:
        profile = Profile(
            name="fuzz",
            runtime=Runtime.DOCKER if docker else Runtime.PROCESS,
            model="m",
            args=args,
            docker=DockerSettings(image="i", ports=("8000:8000",)) if docker else None,
        )
    except ValueError as exc:  # pydantic's ValidationError: the profile refused it
        raise ProfileError(str(exc).splitlines()[0]) from None
    environ = {"VLLM_API_KEY": "k", "HF_TOKEN": "t"}
    saved = {k: os.environ.get(k) for k in environ}
    os.environ.update(environ)
    try:
        plan = plan_container(profile) if docker else ProcessRuntime().plan(profile)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    spec = plan.spec
    fields = dict(spec.create) if isinstance(spec, ContainerSpec) else {"argv": spec.argv, "cwd": spec.cwd}
    shown = json.dumps({k: v for k, v in fields.items() if k != "environment"}, default=str)
    if SECRET in shown or SECRET in plan.report():
        raise AssertionError(f"a secret reached the plan: {args}")


def targets() -> dict[str, tuple[Any, Any, tuple[type, ...]]]:
    """The targets to add to fuzz_parsers.TARGETS."""
    return {
        "stream_chunks": (
            lambda: st.lists(_chunk(), min_size=1, max_size=6),
            check_stream_chunks,
            (StreamError,),
        ),
        "sse_bounds": (_hostile_stream, check_sse_bounds, (SSELimitError,)),
        "yaml_bounds": (_hostile_yaml, check_yaml_bounds, (ProfileError,)),
        "models_answer": (_models_strategy, check_models_answer, (ModelsError,)),
        "secret_args": (_secret_args, check_secret_args, (DynoError,)),
    }
