"""Fuzz the parsers of untrusted text with hypothesis: 0 crashes allowed.

Every input must either parse or raise the module's documented user error:

- ``core.profiles.importers.import_text``  → ``ImportFormatError`` (any ``DynoError`` is accepted)
- ``core.telemetry.metrics.parse_metrics`` → ``MetricsError``
- ``core.runtime.logformats`` (classify_failure, PhaseTracker, parse_*) → never raises
- ``core.bench.sse.SSEDataParser`` (feed in arbitrary chunks, close) → never raises
- the hostile shapes of benchmarks/fuzz_hostile.py: stream chunks of any shape, SSE without blank
  lines or with endless lines, YAML bombs and deep nesting, ``/v1/models`` of any shape, secrets in
  every spelling of a secret flag (bounded, clear errors, no secret in a plan)

Inputs are random text plus mutations (deletions, insertions, replacements, truncation, re-chunking) of
the recorded real fixtures in ``tests/fixtures``, so that deep paths of each parser are reached.

    .venv/bin/python benchmarks/fuzz_parsers.py                # 10,000 cases per target
    .venv/bin/python benchmarks/fuzz_parsers.py --examples 300 --target sse

``tests/test_security.py`` runs the same targets with 300 cases each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO / "app", REPO):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from benchmarks import fuzz_hostile, fuzz_trust  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_dyno.core.bench.sse import SSEDataParser  # noqa: E402
from llm_dyno.core.errors import DynoError  # noqa: E402
from llm_dyno.core.profiles.importers import import_text  # noqa: E402
from llm_dyno.core.runtime import logformats  # noqa: E402
from llm_dyno.core.telemetry.metrics import MetricsError, parse_metrics  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"


def _read(paths: list[Path]) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(paths) if p.is_file()]


COMPOSE_SEEDS = [
    *_read(list((REPO / "tests" / "core" / "profiles" / "fixtures").glob("*.yml"))),
    "services:\n  vllm:\n    image: vllm/vllm-openai:latest\n    command: --model m --port 8000\n"
    "    ports: ['8000:8000']\n    environment:\n      HF_TOKEN: ${HF_TOKEN}\n",
    "docker run --gpus all -p 8000:8000 -e HF_TOKEN=hf_x vllm/vllm-openai:latest --model m "
    '--max-model-len 4096 --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
    "vllm serve Qwen/Qwen3-8B --port 8001 --kv-cache-dtype fp8_e5m2 --gpu-memory-utilization 0.9 \\\n"
    "  --tensor-parallel-size 2 --api-key sk-literal",
]
METRICS_SEEDS = _read(list((FIXTURES / "metrics").glob("*.txt")))
LOG_SEEDS = _read(list((FIXTURES / "logs").glob("*.log")) + list((FIXTURES / "diagnose").glob("*.log")))
SSE_SEEDS = _read(list((FIXTURES / "sse").glob("*.sse")))

# characters that break parsers: quotes, escapes, YAML indicators, line ends, braces, non-ASCII
_NASTY = st.sampled_from(
    [*"\"'\\`${}[]:,#&*!|>%@-=\n\r\t \x00\x0b\x0c\ufeff\u2028é😀", "\r\n", "  ", "- ", ": ", "data:", "{{"]
)
_TEXT = st.text(max_size=40)
_PAYLOAD = st.one_of(_NASTY, _TEXT, st.integers(-(10**12), 10**12).map(str), st.floats().map(repr))


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed with a few random edits (or random text, one time in eight)."""
    if not seeds or draw(st.integers(0, 7)) == 0:
        return draw(st.text(max_size=400))
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "dup_line", "drop_line"]))
        pos = draw(st.integers(0, max(len(text), 1)))
        if op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 20)) :]
        elif op == "insert":
            text = text[:pos] + draw(_PAYLOAD) + text[pos:]
        elif op == "replace":
            text = text[:pos] + draw(_PAYLOAD) + text[pos + draw(st.integers(1, 10)) :]
        elif op == "truncate":
            text = text[:pos]
        else:
            lines = text.split("\n")
            i = min(pos, len(lines) - 1)
            if op == "dup_line":
                lines.insert(i, lines[i])
            elif len(lines) > 1:
                del lines[i]
            text = "\n".join(lines)
    return text


@dataclass
class Crash:
    """One distinct crash (exception type and the innermost frame), with the smallest input seen."""

    signature: str
    count: int
    smallest_input: str
    traceback: str


@dataclass
class Tally:
    """What happened to the cases of one target."""

    cases: int = 0
    parsed: int = 0
    user_errors: Counter[str] = field(default_factory=Counter)
    crashes: dict[str, Crash] = field(default_factory=dict)

    def crash(self, exc: BaseException, value: object) -> None:
        """Record a crash; keep fuzzing so that every distinct crash shows up in one run."""
        frames = traceback.extract_tb(exc.__traceback__)
        last = frames[-1] if frames else None
        where = f"{Path(last.filename).name}:{last.lineno}" if last else "?"
        signature = f"{type(exc).__name__} at {where}"
        shown = repr(value)
        known = self.crashes.get(signature)
        if known is None or len(shown) < len(known.smallest_input):
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self.crashes[signature] = Crash(signature, known.count if known else 0, shown, tb)
        self.crashes[signature].count += 1

    @property
    def crash_count(self) -> int:
        """Cases that crashed."""
        return sum(c.count for c in self.crashes.values())


# ---- the targets: each takes one drawn value, returns "parsed" or raises -----------------------------


def check_import(text: str) -> None:
    """import_text may raise only DynoError (documented: ImportFormatError)."""
    import_text(text, source="fuzz.yml")


def check_metrics(text: str) -> None:
    """parse_metrics may raise only MetricsError."""
    parse_metrics(text)


def check_logs(text: str) -> None:
    """Every log-line function, and the tracker, on every line; classify_failure on the whole tail."""
    lines = text.replace("\r", "\n").split("\n")
    tracker = logformats.PhaseTracker()
    for line in lines:
        tracker.feed(line)
        logformats.line_level(line)
        logformats.strip_prefix(line)
        logformats.parse_event(line)
        logformats.parse_spec_decoding(line)
        logformats.parse_engine_stats(line)
        logformats.parse_warning(line)
        logformats.parse_runtime_stat(line)
        logformats.parse_diagnostic(line)
    logformats.classify_failure(lines, exit_code=1)
    logformats.classify_failure(lines, exit_code=None)


def check_sse(data: tuple[bytes, list[int]]) -> None:
    """Feed the stream cut at arbitrary byte offsets (inside UTF-8 characters, between CR and LF)."""
    raw, cuts = data
    parser = SSEDataParser()
    start = 0
    for cut in sorted({c % (len(raw) + 1) for c in cuts}):
        parser.feed(raw[start:cut])
        start = cut
    parser.feed(raw[start:])
    parser.close()


def _sse_strategy() -> st.SearchStrategy[tuple[bytes, list[int]]]:
    text = mutated(SSE_SEEDS).map(lambda s: s.encode("utf-8", errors="surrogatepass"))
    raw = st.one_of(text, st.binary(max_size=400))
    return st.tuples(raw, st.lists(st.integers(0, 10**6), max_size=20))


TARGETS: dict[str, tuple[Callable[[], st.SearchStrategy[object]], Callable[..., None], tuple[type, ...]]] = {
    "import_text": (lambda: mutated(COMPOSE_SEEDS), check_import, (DynoError,)),
    "parse_metrics": (lambda: mutated(METRICS_SEEDS), check_metrics, (MetricsError,)),
    "logformats": (lambda: mutated(LOG_SEEDS), check_logs, ()),
    "sse": (_sse_strategy, check_sse, ()),
    **fuzz_hostile.targets(),
    **fuzz_trust.targets(),
}


@dataclass
class Outcome:
    """One target's run."""

    target: str
    tally: Tally
    seconds: float


def fuzz(target: str, examples: int, *, seed: int | None = None) -> Outcome:
    """Run one target for ``examples`` cases; a crash is shrunk by hypothesis and reported."""
    make_strategy, check, allowed = TARGETS[target]
    tally = Tally()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is not None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(make_strategy())
    def run_case(value: object) -> None:
        tally.cases += 1
        try:
            check(value)
        except allowed as exc:
            tally.user_errors[type(exc).__name__] += 1
            return
        except Exception as exc:  # a crash: any other exception
            tally.crash(exc, value)
            return
        tally.parsed += 1

    started = time.perf_counter()
    run_case()
    return Outcome(target, tally, time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    """Command line: fuzz every target (or one) and print a table; exit 1 on any crash."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="cases per target (default 10000)")
    parser.add_argument("--target", choices=sorted(TARGETS), action="append", help="only these targets")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    outcomes = [fuzz(t, args.examples) for t in (args.target or list(TARGETS))]
    if args.json:
        rows = [
            {
                "target": o.target,
                "cases": o.tally.cases,
                "parsed": o.tally.parsed,
                "user_errors": dict(o.tally.user_errors),
                "seconds": round(o.seconds, 1),
                "crashes": [vars(c) for c in o.tally.crashes.values()],
            }
            for o in outcomes
        ]
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'target':<15} {'cases':>7} {'parsed':>7} {'user errors':>12} {'crashes':>8} {'time':>8}")
        for o in outcomes:
            errors = sum(o.tally.user_errors.values())
            print(
                f"{o.target:<15} {o.tally.cases:>7} {o.tally.parsed:>7} {errors:>12} "
                f"{o.tally.crash_count:>8} {o.seconds:>7.1f}s"
            )
        for o in outcomes:
            for c in o.tally.crashes.values():
                print(f"\n==== {o.target}: {c.signature} ({c.count} cases) ====")
                print(f"smallest input: {c.smallest_input[:600]}")
                print(c.traceback)
    return 1 if any(o.tally.crashes for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
