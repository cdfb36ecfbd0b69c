"""The trust-boundary shapes of issue 22 as fuzz targets (run by benchmarks/fuzz_parsers.py's runner,
same rules: each input is accepted or raises the module's documented user error; anything else, or an
accepted input that breaks the rule below, is a crash). No server, no Docker: fast.

- ``model_config``: config.json text with NaN, Infinity, negative, huge, string or deeply nested
  values → ``ValueError`` naming the file, or a shape whose every size is a whole number in bounds
- ``safetensors_header``: headers with any ``data_offsets`` → ``ValueError``, or a weight total
  that is a whole number from 0 to a petabyte
- ``log_lines``: byte chunks with long runs and no newline → lines of at most 64 Ki characters (plus
  the note that says a line was cut), the whole text kept up to that bound
- ``label_proof``: label sets and container names, signed or forged or copied onto another name or
  another engine → adopted only when signed with this key for exactly those labels, name and engine
- ``csv_cells``: any server text → a CSV cell with no control character, and none that a spreadsheet
  would run as a formula
- ``suite_counts``: suites whose runs / warm-ups / timeout / max_tokens are any number → ``SuiteError``
  or counts within the bounds
- ``deep_json`` (issue 29): answers of a few KB nested up to 60,000 deep, with lone-surrogate escapes and
  broken tails → ``OutsideJSONError`` naming the source, or a value nested at most ``MAX_DEPTH`` deep
  whose every string encodes as UTF-8
- ``metrics_values`` (issue 29): /metrics text whose counters are any number (``+Inf``, ``-Inf``,
  ``NaN``, negative, huge) before and after a run → ``MetricsError``, or a snapshot of finite values
  >= 0 and a per-run delta with no negative count and acceptance only from counts that can be true
- ``usage_counts`` (issue 29): streams that claim any token count → marked impossible, or a count
  within ``max_tokens`` and within what the stream could hold

- ``secret_args``, ``engine_streams``, ``yaml_keys``, ``env_names``, ``sanitize_bidi`` (issue 29): see
  benchmarks/fuzz_secret_args.py and benchmarks/fuzz_round3.py

``python benchmarks/fuzz_trust.py`` runs each for 10,000 cases and writes the cases, seconds per case
and the peak RSS to benchmarks/results/fuzz_trust.txt.
"""

from __future__ import annotations

import json
import resource
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from llm_dyno.core.bench.client import StreamOutcome
from llm_dyno.core.bench.counters import counter_delta
from llm_dyno.core.bench.plausible import MAX_TOKENS_PER_CHAR, MAX_TOKENS_PER_EVENT, impossible_figures
from llm_dyno.core.bench.suite import MAX_COUNTS, SuiteError, suite_from_yaml
from llm_dyno.core.jsontext import MAX_DEPTH, OutsideJSONError, loads_outside
from llm_dyno.core.runtime.lines import MAX_LINE_CHARS, LineSplitter
from llm_dyno.core.runtime.model_files import read_shape, read_weights
from llm_dyno.core.runtime.ownership import LABEL_PROOF, launched_here, sign_labels
from llm_dyno.core.telemetry.metrics import MetricsError, MetricsSnapshot, parse_metrics
from llm_dyno.core.textsafe import csv_cell

_TMP = Path(tempfile.mkdtemp(prefix="llm-dyno-fuzz-trust-"))
_NUMBER_WORDS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-5",
    "0",
    "1.5",
    '"two"',
    "true",
    "null",
    "[]",
    "{}",
]

# ---- model_config ---------------------------------------------------------------------------------

_FIELDS = [
    "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size", "head_dim",
    "intermediate_size", "vocab_size", "max_position_embeddings", "kv_lora_rank", "qk_rope_head_dim",
]  # fmt: skip


@st.composite
def _config(draw: st.DrawFn) -> str:
    values = {"num_hidden_layers": "2", "num_attention_heads": "2", "hidden_size": "128"}
    for key in draw(st.lists(st.sampled_from(_FIELDS), max_size=5)):
        values[key] = draw(
            st.one_of(
                st.sampled_from(_NUMBER_WORDS),
                st.integers(-(10**40), 10**40).map(str),
                st.floats(allow_nan=False, allow_infinity=False).map(repr),
            )
        )
    body = ", ".join(f'"{k}": {v}' for k, v in values.items())
    depth = draw(st.sampled_from([0, 0, 0, 10, 100_000]))
    nested = f', "x": {"[" * depth}{"]" * depth}' if depth else ""
    return "{" + body + nested + "}"


def check_model_config(text: str) -> None:
    folder = _TMP / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(text)
    shape = read_shape(folder)
    sizes = [shape.layers, shape.attention_layers, shape.kv_heads, shape.head_dim, shape.hidden_size]
    for value in [
        *sizes,
        shape.intermediate_size,
        shape.vocab_size,
        shape.max_positions or 0,
        shape.mla_dim or 0,
    ]:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value > 2**40:
            raise AssertionError(f"an impossible size was accepted: {value!r} from {text[:200]}")


# ---- safetensors_header ---------------------------------------------------------------------------


@st.composite
def _header(draw: st.DrawFn) -> bytes:
    tensors: dict[str, Any] = {}
    for i in range(draw(st.integers(0, 4))):
        offsets = draw(
            st.one_of(
                st.lists(st.integers(-(10**20), 10**20), min_size=0, max_size=3),
                st.just("0,8"),
                st.lists(st.floats(allow_nan=True), min_size=2, max_size=2),
            )
        )
        tensors[f"t{i}"] = {
            "dtype": draw(st.sampled_from(["BF16", "F32", "I8", "??"])),
            "data_offsets": offsets,
        }
    raw = json.dumps(tensors, allow_nan=True).encode()
    return struct.pack("<Q", len(raw)) + raw


def check_safetensors_header(data: bytes) -> None:
    folder = _TMP / "weights"
    folder.mkdir(exist_ok=True)
    (folder / "model.safetensors").write_bytes(data)
    info = read_weights(folder)
    if not isinstance(info.total_bytes, int) or not 0 <= info.total_bytes <= 2**50:
        raise AssertionError(f"an impossible weight total was accepted: {info.total_bytes!r}")


# ---- log_lines ------------------------------------------------------------------------------------


@st.composite
def _log_chunks(draw: st.DrawFn) -> list[bytes]:
    chunks = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            chunks.append(b"x" * draw(st.integers(0, 3 * MAX_LINE_CHARS)))
        elif kind == 1:
            chunks.append(draw(st.sampled_from([b"\n", b"\r", b"\r\n", b"\n\n"])))
        else:
            chunks.append(draw(st.binary(max_size=200)))
    return chunks


def check_log_lines(chunks: list[bytes]) -> None:
    splitter = LineSplitter()
    lines = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.flush()
    for line in lines:
        if len(line) > MAX_LINE_CHARS + 80:
            raise AssertionError(f"a line of {len(line):,} characters was kept")
        if any(c in line for c in "\r\n"):
            raise AssertionError("a line end inside a line")


# ---- label_proof ----------------------------------------------------------------------------------

_KEY = b"k" * 32
_ENGINE = "ABCD:EFGH:engine-a"
_LABELS = st.dictionaries(
    st.one_of(
        st.sampled_from(["llm-dyno.managed", "llm-dyno.profile", "llm-dyno.host-port"]), st.text(max_size=12)
    ),
    st.text(max_size=20),
    max_size=5,
)


@st.composite
def _labelled(draw: st.DrawFn) -> tuple[dict[str, str], str, str, bool]:
    labels = draw(_LABELS)
    name = draw(st.text(min_size=1, max_size=20))
    how = draw(st.sampled_from(["signed", "forged", "copied", "edited", "other-engine"]))
    return labels, name, how, draw(st.booleans())


def check_label_proof(case: tuple[dict[str, str], str, str, bool]) -> None:
    labels, name, how, extra = case
    signed = {**labels, LABEL_PROOF: sign_labels(labels, name, _KEY, _ENGINE)}
    engine = _ENGINE
    if how == "signed":
        if not launched_here(signed, name, _KEY, engine) or launched_here(signed, name, None, engine):
            raise AssertionError("a signed label set was not recognised (or was without a key)")
        return
    if how == "forged":
        forged, other = {**labels, LABEL_PROOF: "0" * 64}, name
    elif how == "copied":
        forged, other = signed, name + "x"
    elif how == "other-engine":  # the same container, labels and proof replayed on another engine
        forged, other, engine = signed, name, _ENGINE + "-b"
    else:
        forged, other = {**signed, "llm-dyno.host-port": signed.get("llm-dyno.host-port", "") + "1"}, name
    if extra:
        forged = {**forged, "org.example.other": "x"}  # labels that are not ours never matter
    if launched_here(forged, other, _KEY, engine) and how != "signed":
        raise AssertionError(f"a {how} label set was adopted: {forged}")


# ---- csv_cells ------------------------------------------------------------------------------------


def check_csv_cell(text: str) -> None:
    cell = csv_cell(text)
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in cell):
        raise AssertionError(f"a control character reached a CSV cell: {cell!r}")
    if cell[:1] in ("=", "+", "-", "@"):
        try:
            float(cell)
        except ValueError:
            raise AssertionError(f"a formula reached a CSV cell: {cell!r}") from None


_CELLS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "-5", "1e3", "\t=1", "\x1b]0;x\x07=1"]
    ),
)

# ---- suite_counts ---------------------------------------------------------------------------------


@st.composite
def _suite(draw: st.DrawFn) -> str:
    def number() -> str:
        return str(
            draw(st.one_of(st.integers(-(10**12), 10**12), st.sampled_from([".nan", ".inf", "x", "1.5"])))
        )

    return (
        f"name: f\nwarmups: {number()}\nruns: {number()}\ntimeout_s: {number()}\n"
        f"prompts:\n  - name: n\n    max_tokens: {number()}\n"
        "    messages:\n      - role: user\n        content: hi\n"
    )


def check_suite_counts(text: str) -> None:
    suite = suite_from_yaml(text, "fuzz.yaml")
    for key, value in (("runs", suite.runs), ("warmups", suite.warmups), ("timeout_s", suite.timeout_s)):
        if value > MAX_COUNTS[key]:
            raise AssertionError(f"{key} {value} passed its bound")
    if any(p.max_tokens > MAX_COUNTS["max_tokens"] for p in suite.prompts):
        raise AssertionError("max_tokens passed its bound")


# ---- deep_json ------------------------------------------------------------------------------------


@st.composite
def _deep_json(draw: st.DrawFn) -> bytes:
    depth = draw(st.one_of(st.integers(0, 2 * MAX_DEPTH), st.integers(0, 60_000)))
    opener = draw(st.sampled_from([b"[", b'{"a":', b'[{"b":']))
    closer = {b"[": b"]", b'{"a":': b"}", b'[{"b":': b"}]"}[opener]
    core = draw(st.sampled_from([b"1", b'"x\\ud800y"', b'"\\udfff"', b'"ok"', b"[]", b"{}", b"NaN", b"\xff"]))
    tail = closer * depth
    if draw(st.booleans()):
        tail = tail[: draw(st.integers(0, len(tail)))]  # a broken answer: cut anywhere
    return opener * depth + core + tail


def check_deep_json(data: bytes) -> None:
    value = loads_outside(data, "fuzz")  # OutsideJSONError is the documented refusal
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            raise AssertionError(f"a value nested {level} deep was accepted")
        if isinstance(item, str):
            item.encode("utf-8")  # a lone surrogate would raise here
        elif isinstance(item, dict):
            stack.extend((k, level) for k in item)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)


# ---- metrics_values / usage_counts ----------------------------------------------------------------

_COUNTER_NAMES = (
    "vllm:generation_tokens_total",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:num_requests_running",
    "vllm:kv_cache_usage_perc",
)
_VALUES = st.one_of(
    st.sampled_from(["+Inf", "-Inf", "NaN", "-1", "0", "1e308", "1e400", "-0.0"]),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@st.composite
def _metrics_pair(draw: st.DrawFn) -> tuple[str, str]:
    def text() -> str:
        # two engines: their sum can overflow where each value alone is finite
        lines = [f'{n}{{engine="{e}",model_name="m"}} {draw(_VALUES)}' for n in _COUNTER_NAMES for e in "01"]
        pos = [
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {draw(_VALUES)}'
            for i in range(2)
        ]
        return "\n".join(lines + pos) + "\n"

    return text(), text()


def _finite_snapshot(snap: MetricsSnapshot) -> None:
    values = [v for v in snap.to_dict().values() if isinstance(v, float)]
    values += list(snap.spec_accepted_per_pos.values())
    if any(not (v == v and abs(v) != float("inf") and v >= 0) for v in values):
        raise AssertionError(f"a snapshot holds a value that is no reading: {snap}")


def check_metrics_values(pair: tuple[str, str]) -> None:
    before, after = (parse_metrics(t, float(i)) for i, t in enumerate(pair))  # MetricsError: refused
    _finite_snapshot(before)
    _finite_snapshot(after)
    delta = counter_delta(before, after)
    for count in (delta.generation_tokens, delta.read_bytes):
        if count is not None and count < 0:
            raise AssertionError(f"a negative count was stored: {delta}")
    if delta.acceptance is not None and not delta.acceptance.possible:
        raise AssertionError(f"an acceptance from counts that cannot be true: {delta.acceptance}")


@st.composite
def _usage(draw: st.DrawFn) -> tuple[StreamOutcome, int]:
    events = draw(st.integers(0, 50))
    outcome = StreamOutcome(
        ttft_s=0.1, wall_s=1.0, completion_tokens=draw(st.integers(0, 10_000_000)), prompt_tokens=None,
        finish_reason="length", chunks=events, latency=None, content_chars=draw(st.integers(0, 5_000)),
        reasoning_chars=draw(st.integers(0, 500)), saw_done=True,
        event_times_s=tuple(0.01 * i for i in range(events)),
    )  # fmt: skip
    return outcome, draw(st.integers(1, 100_000))


def check_usage_counts(case: tuple[StreamOutcome, int]) -> None:
    outcome, max_tokens = case
    if impossible_figures(outcome, max_tokens) is not None:
        return  # marked: left out of every figure
    text = outcome.content_chars + outcome.reasoning_chars
    room = MAX_TOKENS_PER_CHAR * text + MAX_TOKENS_PER_EVENT * len(outcome.event_times_s)
    if outcome.completion_tokens > max_tokens or outcome.completion_tokens > room:
        raise AssertionError(f"an impossible count was let through: {outcome.completion_tokens}")


def targets() -> dict[str, tuple[Any, Any, tuple[type, ...]]]:
    """The targets to add to fuzz_parsers.TARGETS."""
    from benchmarks.fuzz_round3 import TARGETS as ROUND3  # issue 29 classes 4, 6, 9, 11
    from benchmarks.fuzz_secret_args import TARGET as SECRET_ARGS  # as main imports fuzz_parsers

    return {
        "model_config": (_config, check_model_config, (ValueError,)),
        "safetensors_header": (_header, check_safetensors_header, (ValueError,)),
        "log_lines": (_log_chunks, check_log_lines, ()),
        "label_proof": (_labelled, check_label_proof, ()),
        "csv_cells": (lambda: _CELLS, check_csv_cell, ()),
        "suite_counts": (_suite, check_suite_counts, (SuiteError,)),
        "deep_json": (_deep_json, check_deep_json, (OutsideJSONError,)),
        "secret_args": SECRET_ARGS,  # issue 29 class 5: see benchmarks/fuzz_secret_args.py
        "metrics_values": (_metrics_pair, check_metrics_values, (MetricsError,)),
        "usage_counts": (_usage, check_usage_counts, ()),
        **ROUND3,  # engine_streams, yaml_keys, env_names, sanitize_bidi: see benchmarks/fuzz_round3.py
    }


_RESULTS = Path(__file__).resolve().parent / "results" / "fuzz_trust.txt"
_HEAD = f"{'target':<20} {'cases':>7} {'accepted':>8} {'refused':>8} {'crashes':>8} {'ms/case':>8}  peak RSS"


def _kept_rows() -> dict[str, list[str]]:
    """The rows of the results file by target (a crash line goes with the target above it)."""
    rows: dict[str, list[str]] = {}
    last = None
    lines = _RESULTS.read_text().splitlines() if _RESULTS.exists() else []
    for line in lines:
        if line.startswith("  crash ") and last is not None:
            rows[last].append(line)
        elif line and not line.startswith(("#", "target ")):
            last = line.split()[0]
            rows[last] = [line]
    return rows


def _write(rows: dict[str, list[str]], run_now: list[str]) -> None:
    """The results file: this run's rows, and the rows of targets not run now as an earlier run left them."""
    earlier = [t for t in targets() if t in rows and t not in run_now]
    order = [*run_now, *earlier]  # as run: the peak RSS is cumulative
    note = f"; {', '.join(earlier)}: from an earlier run" if earlier else ""
    body = [line for t in order for line in rows[t]]
    title = "# python benchmarks/fuzz_trust.py (issues 22, 29): peak RSS is the process's so far (cumulative)"
    _RESULTS.write_text("\n".join([title + note, _HEAD, *body]) + "\n")


def main() -> int:
    """Each target (or those named in argv) for 10,000 cases (or a number in argv); the table goes to
    stdout and, row by row as each target ends, to the results file (rows of targets not run now are
    kept as they were)."""
    from benchmarks import fuzz_parsers

    args = sys.argv[1:]
    examples = next((int(a) for a in args if a.isdigit()), 10_000)
    run_now = [a for a in args if not a.isdigit()] or list(targets())
    unknown = [t for t in run_now if t not in targets()]
    if unknown:
        print(f"unknown targets: {', '.join(unknown)}; known: {', '.join(targets())}", file=sys.stderr)
        return 2
    rows = _kept_rows()
    print(_HEAD)
    crashed = False
    for target in run_now:
        outcome = fuzz_parsers.fuzz(target, examples)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        per_case = outcome.seconds / max(1, outcome.tally.cases) * 1000
        refused = sum(outcome.tally.user_errors.values())
        rows[target] = [
            f"{target:<20} {outcome.tally.cases:>7} {outcome.tally.parsed:>8} {refused:>8} "
            f"{outcome.tally.crash_count:>8} {per_case:>8.2f} {peak_mb:>7.0f} MB"
        ]
        for crash in outcome.tally.crashes.values():
            crashed = True
            rows[target].append(f"  crash {crash.signature}: {crash.smallest_input[:300]}")
        print("\n".join(rows[target]), flush=True)
        if examples >= 10_000:
            _write(rows, run_now)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
