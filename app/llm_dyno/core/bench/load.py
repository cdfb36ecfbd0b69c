"""Load levels: a suite's prompts sent by N parallel streams (closed loop) or at a Poisson rate (open loop),
and the figures ``vllm bench serve`` reports for each level.

The per-request timings are :class:`~llm_dyno.core.bench.peer.PeerTimings` (the one place that defines
TTFT, E2E, TPOT and ITL as ``vllm bench serve`` does); a level pools them:

* **output throughput**: Σ output tokens (``usage``) / the level's duration, first request sent → last
  request done (``vllm bench serve``'s ``benchmark_duration``);
* **TTFT / TPOT / ITL / E2E**: mean, median and p99 (numpy's linear percentile) over the requests; ITL
  pools every gap of every request; TPOT leaves out requests of one token;
* **per-user TPS**: 1 / mean TPOT, the decode speed one user sees (the "tokens/s/user" axis of
  throughput–interactivity plots; the inverse of the mean TPOT ``vllm bench serve`` prints, so one
  stream that arrived in a burst, TPOT near 0, does not blow it up as a mean of 1 / TPOT would);
* **goodput**: requests meeting every SLO / duration, with ``vllm bench serve``'s rule: TTFT ≤ its SLO,
  TPOT ≤ its SLO (a one-token request counts TPOT 0), E2E ≤ its SLO.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_serializer, model_validator

from llm_dyno.core.bench.peer import PeerTimings, percentile
from llm_dyno.core.bench.run_readings import Acceptance, EnergyStats
from llm_dyno.core.errors import DynoError
from llm_dyno.core.records import Record


class LoadError(DynoError):
    """A load option (levels, rates, SLOs) is malformed."""


_UNITS = {"ms": 0.001, "s": 1.0}
_SLO_KEYS = ("ttft", "tpot", "e2e")


class Slo(Record):
    """User service-level objectives in seconds (None: not asked for); stored by field."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    @property
    def empty(self) -> bool:
        """No objective set."""
        return self.ttft_s is None and self.tpot_s is None and self.e2e_s is None

    def met_by(self, p: PeerTimings) -> bool:
        """``vllm bench serve``'s goodput rule for one request (TPOT of a one-token request is 0)."""
        tpot = p.tpot_s if p.tpot_s is not None else 0.0
        return all(
            limit is None or value <= limit
            for limit, value in ((self.ttft_s, p.ttft_s), (self.tpot_s, tpot), (self.e2e_s, p.e2e_s))
        )

    def describe(self) -> str:
        """``ttft=2s,tpot=50ms``."""
        parts = [
            f"{k}={_fmt_s(v)}" for k, v in zip(_SLO_KEYS, (self.ttft_s, self.tpot_s, self.e2e_s), strict=True)
        ]
        return ",".join(p for p in parts if not p.endswith("=None"))


def _fmt_s(v: float | None) -> str:
    if v is None:
        return "None"
    return f"{v * 1000:g}ms" if v < 1 else f"{v:g}s"


def parse_slo(text: str) -> Slo:
    """``ttft=2s,tpot=50ms,e2e=10s`` (a bare number is milliseconds, as ``vllm bench serve --goodput``)."""
    values: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, raw = part.partition("=")
        key = key.strip().lower().removesuffix("_s").removesuffix("l")  # e2el (vLLM's name) → e2e
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s)?\s*", raw)
        if not sep or key not in _SLO_KEYS or m is None:
            raise LoadError(
                f"--slo: cannot read {part!r}",
                hint="write e.g. ttft=2s,tpot=50ms,e2e=10s (keys ttft, tpot, e2e; units ms or s)",
            )
        values[key] = float(m.group(1)) * _UNITS[m.group(2) or "ms"]
    if not values:
        raise LoadError("--slo is empty", hint="write e.g. ttft=2s,tpot=50ms")
    return Slo(ttft_s=values.get("ttft"), tpot_s=values.get("tpot"), e2e_s=values.get("e2e"))


def parse_concurrency(text: str) -> tuple[int, ...]:
    """``1,2,4,8`` → (1, 2, 4, 8): whole numbers from 1 to 256."""
    try:
        levels = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise LoadError(f"--concurrency must be whole numbers like 1,2,4,8, got {text!r}") from None
    if not levels or any(n < 1 or n > 256 for n in levels):
        raise LoadError(f"--concurrency levels must be between 1 and 256, got {text!r}")
    return levels


def parse_rates(text: str) -> tuple[float, ...]:
    """``0.5,1,2`` requests per second → (0.5, 1.0, 2.0); each above 0 and at most 1000."""
    try:
        rates = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise LoadError(f"--rate must be requests per second like 0.5,1,2, got {text!r}") from None
    if not rates or any(not (0 < r <= 1000) for r in rates):
        raise LoadError(f"--rate values must be above 0 and at most 1000 requests/s, got {text!r}")
    return rates


class LoadLevel(Record):
    """One level: ``concurrency`` parallel streams (closed loop) or Poisson arrivals at ``rate`` per s;
    stored as ``{"concurrency": N}`` or ``{"rate": R}``."""

    concurrency: int | None = None
    rate: float | None = None

    def describe(self) -> str:
        """``concurrency 4`` / ``rate 2 req/s``."""
        return (
            f"concurrency {self.concurrency}" if self.concurrency is not None else f"rate {self.rate:g} req/s"
        )

    @model_serializer
    def _stored(self) -> dict[str, float | int]:
        return (
            {"concurrency": self.concurrency} if self.concurrency is not None else {"rate": self.rate or 0.0}
        )


class RequestRecord(Record):
    """One request of a level: what it asked for and what came back (``peer`` None: it failed); stored
    by field."""

    prompt: str
    sent_at_s: float  # since the level began
    output_tokens: int
    prompt_tokens: int | None
    peer: PeerTimings | None
    error: str | None = None


class Stat(Record):
    """Mean, median and p99 of one figure, in seconds."""

    mean: float
    median: float
    p99: float

    @staticmethod
    def of(values: Sequence[float]) -> Stat | None:
        """None without values."""
        if not values:
            return None
        return Stat(mean=sum(values) / len(values), median=percentile(values, 50), p99=percentile(values, 99))


class LevelResult(Record):
    """One finished level: its requests, duration and the server's counters over it; stored by field
    (``model_dump``: the raw requests and counters, figures are derived on reading)."""

    level: LoadLevel
    requests: tuple[RequestRecord, ...]
    duration_s: float
    generation_tokens_delta: int | None = None
    acceptance: Acceptance | None = None
    energy: EnergyStats | None = None
    error: str | None = None

    @property
    def ok(self) -> tuple[RequestRecord, ...]:
        """The requests that finished."""
        return tuple(r for r in self.requests if r.peer is not None)

    @property
    def output_tokens(self) -> int:
        """Σ usage completion tokens over the finished requests."""
        return sum(r.output_tokens for r in self.ok)

    @property
    def output_throughput_tps(self) -> float | None:
        """Output tokens / duration."""
        return self.output_tokens / self.duration_s if self.duration_s > 0 else None

    def _peers(self) -> list[PeerTimings]:
        return [r.peer for r in self.ok if r.peer is not None]

    @property
    def per_user_tps(self) -> float | None:
        """1 / mean TPOT (requests with more than one token): the decode speed one user sees."""
        tpot = self.tpot()
        return 1 / tpot.mean if tpot is not None and tpot.mean > 0 else None

    def ttft(self) -> Stat | None:
        """TTFT over the requests."""
        return Stat.of([p.ttft_s for p in self._peers()])

    def tpot(self) -> Stat | None:
        """TPOT over the requests with more than one token."""
        return Stat.of([p.tpot_s for p in self._peers() if p.tpot_s is not None])

    def itl(self) -> Stat | None:
        """ITL pooled over every gap of every request."""
        return Stat.of([g for p in self._peers() for g in p.itl_s])

    def e2e(self) -> Stat | None:
        """E2E latency over the requests."""
        return Stat.of([p.e2e_s for p in self._peers()])

    def goodput_rps(self, slo: Slo) -> float | None:
        """Requests meeting every SLO / duration; None without SLOs."""
        if slo.empty or self.duration_s <= 0:
            return None
        return sum(1 for p in self._peers() if slo.met_by(p)) / self.duration_s

    def warnings(self) -> list[str]:
        """What makes the level's figures doubtful."""
        out: list[str] = []
        failed = len(self.requests) - len(self.ok)
        if failed:
            out.append(f"{failed} of {len(self.requests)} requests failed")
        gen = self.generation_tokens_delta
        if gen is not None and gen != self.output_tokens:
            out.append(
                f"the server generated {gen} tokens during this level but streamed {self.output_tokens}: "
                "another client was using it"
            )
        return out

    def summary(self, slo: Slo) -> dict[str, Any]:
        """The level's figures (the ``levels`` entries of ``--json``)."""

        def s(stat: Stat | None) -> dict[str, float] | None:
            return None if stat is None else stat.model_dump(mode="json")

        acc = self.acceptance
        energy = self.energy
        return {
            **self.level.model_dump(mode="json"),
            "requests": len(self.ok),
            "failed": len(self.requests) - len(self.ok),
            "duration_s": self.duration_s,
            "output_tokens": self.output_tokens,
            "generation_tokens_delta": self.generation_tokens_delta,
            "output_throughput_tps": self.output_throughput_tps,
            "per_user_tps": self.per_user_tps,
            "ttft_s": s(self.ttft()),
            "tpot_s": s(self.tpot()),
            "itl_s": s(self.itl()),
            "e2e_s": s(self.e2e()),
            "goodput_rps": self.goodput_rps(slo),
            "acceptance": None if acc is None else {"rate": acc.rate, "mean_length": acc.mean_length},
            "energy_j": None if energy is None else energy.energy_j,
            "tokens_per_j": None if energy is None else energy.tokens_per_j,
            "mean_power_w": None if energy is None else energy.mean_power_w,
            "warnings": self.warnings(),
            "error": self.error,
        }


class LoadResult(Record):
    """A load run: the suite's prompts at every level, in order; finished levels only. Frozen: the
    runner makes a new one as each level finishes (``model_copy``).

    Its JSON (``model_dump``, the ``--json`` form and what the history stores) is the run, ``levels``
    (each level's figures) and ``raw_levels`` (the levels as stored, from which ``model_validate``
    reads it back)."""

    suite: str
    url: str
    model: str
    profile: str | None = None
    started: str = ""
    finished: str = ""
    slo: Slo = Field(default_factory=Slo)
    seed: int = 0
    requests_per_level: int = 0
    gpus: str | None = None
    levels: tuple[LevelResult, ...] = ()
    cancelled: bool = False
    error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_stored(cls, data: Any) -> Any:
        if isinstance(data, dict) and "raw_levels" in data:  # the stored form: figures are derived again
            data = {k: v for k, v in data.items() if k not in ("kind", "levels", "raw_levels")} | {
                "levels": data["raw_levels"] or ()
            }
        return data

    @model_serializer
    def _stored(self) -> dict[str, Any]:
        return {
            "kind": "load",
            "suite": self.suite,
            "url": self.url,
            "model": self.model,
            "profile": self.profile,
            "started": self.started,
            "finished": self.finished,
            "slo": self.slo.model_dump(mode="json"),
            "seed": self.seed,
            "requests_per_level": self.requests_per_level,
            "gpus": self.gpus,
            "cancelled": self.cancelled,
            "error": self.error,
            "levels": [lv.summary(self.slo) for lv in self.levels],
            "raw_levels": [lv.model_dump(mode="json") for lv in self.levels],
        }

    def to_json(self) -> str:
        """JSON text."""
        return json.dumps(self.model_dump(mode="json"), indent=2)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both axes (higher is better on both), by x."""
    front = [
        i
        for i, (x, y) in enumerate(points)
        if not any((x2 >= x and y2 >= y) and (x2 > x or y2 > y) for x2, y2 in points)
    ]
    return sorted(front, key=lambda i: points[i][0])


def level_table(result: LoadResult) -> list[str]:
    """Text lines: one per level (what ``bench --concurrency`` prints)."""
    head = (
        f"{'level':<16} {'req':>4} {'out tok':>8} {'out TPS':>8} {'user TPS':>8} {'TTFT ms':>8} "
        f"{'TPOT ms':>8} {'ITL ms':>8} {'E2E ms':>8} {'goodput':>8} {'accept':>7}"
    )
    lines = [head]
    for lv in result.levels:
        d = lv.summary(result.slo)

        def ms(key: str, d: dict[str, Any] = d) -> str:
            v = d[key]
            return "—" if v is None else f"{v['mean'] * 1000:.1f}"

        def num(v: float | None, spec: str = ".1f") -> str:
            return "—" if v is None else f"{v:{spec}}"

        acc = lv.acceptance.rate if lv.acceptance is not None else None
        lines.append(
            f"{lv.level.describe():<16} {d['requests']:>4} {d['output_tokens']:>8} "
            f"{num(d['output_throughput_tps']):>8} {num(d['per_user_tps']):>8} {ms('ttft_s'):>8} "
            f"{ms('tpot_s'):>8} {ms('itl_s'):>8} {ms('e2e_s'):>8} {num(d['goodput_rps'], '.2f'):>8} "
            f"{'—' if acc is None else f'{acc * 100:.0f}%':>7}"
        )
        lines.extend(f"  warning: {w}" for w in lv.warnings())
    return lines
