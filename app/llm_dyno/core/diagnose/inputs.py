"""What a diagnosis looks at. Every piece is optional: rules use what is there and stay silent otherwise."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.diagnose.evidence import LogEvidence


@dataclass(frozen=True)
class LaunchLog:
    """A server's log as numbered lines (1-based, as in the file, comment lines included)."""

    lines: tuple[str, ...] = ()
    first_line_no: int = 1
    source: str | None = None
    label: str = "log:"  # how evidence names a line: "log:12", or "post line 12" for a pasted post

    @staticmethod
    def from_text(text: str, source: str | None = None) -> LaunchLog:
        """Split a log file's text into lines; tqdm's carriage returns end a line too."""
        return LaunchLog(tuple(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")), 1, source)

    def numbered(self) -> Iterator[tuple[int, str]]:
        """(line number, line) pairs."""
        for i, line in enumerate(self.lines):
            yield self.first_line_no + i, line

    def evidence(self, line_no: int) -> LogEvidence:
        """The line of that number as evidence."""
        return LogEvidence(self.lines[line_no - self.first_line_no], line_no, self.label)


@dataclass(frozen=True)
class Environment:
    """Where the server ran: the image and vLLM it really used, the GPU and driver.

    ``gpu_mem_used_before_launch_bytes`` is memory other processes held before the server started.
    """

    image: str | None = None
    image_digest: str | None = None
    vllm_version: str | None = None
    gpu_name: str | None = None
    driver: str | None = None
    gpu_mem_used_before_launch_bytes: int | None = None
    gpu_mem_total_bytes: int | None = None


@dataclass(frozen=True)
class Measured:
    """The user's own numbers (wall tokens/s per prompt, per-position acceptance as fractions)."""

    narrative_tps: float | None = None
    code_tps: float | None = None
    acceptance_per_position: tuple[float, ...] = ()
    mean_acceptance_length: float | None = None
    source: str = "typed"
    acceptance_source: str = ""  # where the acceptance figures came from, when not from ``source``
    # per prompt kind: (prompt, mean acceptance length, where it came from), from a benchmark
    length_by_prompt: tuple[tuple[str, float, str], ...] = ()
    power_cap_w: float | None = None  # the cap the user's numbers were measured at (typed)
    power_cap_source: str = "typed"  # where the cap came from ("post line 1" for a pasted post)
    # narrative TPS of the same setup without speculative decoding (typed --no-spec-tps, or the
    # profile's stored A/B), for the split of time per pass into target forward and speculation overhead
    no_spec_tps: float | None = None
    no_spec_source: str = "typed"

    def length_of(self, prompt: str) -> tuple[float, str] | None:
        """The prompt kind's own mean acceptance length and its source, where measured apart."""
        return next(((length, src) for p, length, src in self.length_by_prompt if p == prompt), None)

    @property
    def acceptance_from(self) -> str:
        """Where the acceptance figures came from (``/metrics``, ``log: 3 SpecDecoding lines``, …)."""
        return self.acceptance_source or self.source


def parse_acceptance(text: str) -> tuple[float, ...]:
    """Per-position acceptance typed as ``93,86.6,73.9`` (percent) or ``0.93,0.866,0.739`` (fractions),
    as fractions; ValueError saying which value is wrong and what is expected."""
    parts = [p.strip().rstrip("%").strip() for p in text.replace(";", ",").replace("/", ",").split(",")]
    values: list[float] = []
    for part in parts:
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            example = "write rates per position, e.g. 93,86.6,73.9"
            raise ValueError(f"{part!r} is not a number ({example})") from None
        if not math.isfinite(value) or value < 0 or value > 100:
            raise ValueError(f"{part!r} is not an acceptance rate (0–100 %, or a fraction 0–1)")
        values.append(value)
    if not values:
        raise ValueError("no acceptance rates given (write one per position, e.g. 93,86.6,73.9)")
    # percent when any value is above 1: "93,86.6,73.9"; fractions otherwise: "0.93,0.866,0.739"
    scale = 100.0 if any(v > 1 for v in values) else 1.0
    return tuple(round(v / scale, 6) for v in values)


def measured_from_bench(result: BenchResult) -> Measured:
    """Mean wall TPS of the narrative and code prompts and acceptance over all measured runs."""

    def mean(name: str) -> float | None:
        p = result.prompt(name)
        s = p.summary("wall_tps") if p else None
        return s.mean if s else None

    total = None
    by_prompt: list[tuple[str, float, str]] = []
    for p in result.prompts:
        acc = p.acceptance
        if acc is not None:
            total = acc if total is None else total + acc
        # the server's own per-request figure first: it counts this prompt's requests alone
        req = p.request_acceptance
        if req is not None and req.steps:
            n = f"{req.requests} request{'s' if req.requests != 1 else ''}"
            by_prompt.append((p.name, req.mean_length, f"per-request (server), {n}"))
        elif acc is not None and acc.mean_length:
            by_prompt.append((p.name, acc.mean_length, "/metrics deltas of its runs"))
    return Measured(
        mean("narrative"),
        mean("code"),
        total.per_position if total else (),
        total.mean_length if total else None,
        "benchmark",
        length_by_prompt=tuple(by_prompt),
    )


@dataclass(frozen=True)
class SyntheticSupport:
    """Whether the profile's vLLM has synthetic rejection sampling (None: not checkable from here), and
    the synthetic keys its ``SpeculativeConfig`` has (``synthetic_acceptance_rates``, …), as it lists them."""

    supported: bool | None
    detail: str
    keys: tuple[str, ...] = ()
