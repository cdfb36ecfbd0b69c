"""Runtime statistics lines: SpecDecoding metrics, engine throughput, warnings that matter."""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_dyno.core.runtime.logformats.prefix import _number, line_level, strip_prefix

# ---- runtime statistics (SpecDecoding, throughput) -------------------------------------------------
# Parsers for periodic lines belong here, key by key, like the events above.


# ==== runtime statistics: SpecDecoding, engine throughput, warnings (telemetry work) ================
# Parsed key by key: each "Key: value" pair is looked up by name, so a field added, dropped or moved
# between versions (v0.8 "Draft acceptance rate", v0.10+ throughputs, "GPU"/"CPU KV cache usage",
# optional "Preemptions") does not break the rest. Values are as logged: percentages stay percent.

_KV_PAIR = re.compile(
    r"(?P<key>[A-Za-z][A-Za-z ()/-]*?):\s*(?P<value>-?[\d.,]+|nan)\s*(?P<unit>%|tokens/s|tokens|reqs)?"
)
_SPEC_HEAD = re.compile(r"^(?:SpecDecoding|Speculative) metrics:\s*")
_ENGINE_HEAD = re.compile(r"^(?:Engine (?P<engine>\d+)|(?P<count>\d+) Engines Aggregated):\s*")
_PER_POS_RATES = re.compile(
    r"Per-position acceptance rate:\s*(?P<rates>\d+(?:\.\d+)?(?:\s*,\s*\d+(?:\.\d+)?)*)"
)


def _pairs(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in _KV_PAIR.finditer(text):
        try:
            out.setdefault(m.group("key").strip().lower(), _number(m.group("value")))
        except ValueError:
            continue
    return out


@dataclass(frozen=True)
class SpecDecodingLog:
    """A ``SpecDecoding metrics:`` line (V1) or ``Speculative metrics:`` line (V0), as logged.

    Fields the line's version does not print are None. ``acceptance_rate_pct`` is in percent
    (V0 logs a fraction; it is converted).
    """

    line: str
    mean_acceptance_length: float | None = None
    accepted_tps: float | None = None
    drafted_tps: float | None = None
    accepted_tokens: int | None = None
    drafted_tokens: int | None = None
    per_position: tuple[float, ...] | None = None
    acceptance_rate_pct: float | None = None


@dataclass(frozen=True)
class EngineStatsLog:
    """An ``Engine 000: Avg prompt throughput: …`` line. ``kv_cache_device`` is "GPU" or "CPU"."""

    line: str
    engine: int | None
    prompt_tps: float | None = None
    generation_tps: float | None = None
    running: int | None = None
    waiting: int | None = None
    preemptions: int | None = None
    kv_cache_usage_pct: float | None = None
    kv_cache_device: str | None = None
    prefix_cache_hit_pct: float | None = None


@dataclass(frozen=True)
class WarningLog:
    """A WARNING (or worse) line: its level and bare message, for the UI's event list."""

    line: str
    level: str
    message: str


def _int_or_none(v: float | None) -> int | None:
    return None if v is None else int(v)


def parse_spec_decoding(line: str) -> SpecDecodingLog | None:
    """Read a spec-decoding statistics line, or None if the line is not one."""
    msg = strip_prefix(line)
    head = _SPEC_HEAD.search(msg)
    if head is None:
        return None
    body = msg[head.end() :]
    p = _pairs(body)
    per_pos = _PER_POS_RATES.search(body)
    rate = p.get("avg draft acceptance rate", p.get("draft acceptance rate"))
    if rate is not None and msg.startswith("Speculative"):  # V0 logs a fraction
        rate *= 100
    return SpecDecodingLog(
        line=line,
        mean_acceptance_length=p.get("mean acceptance length"),
        accepted_tps=p.get("accepted throughput"),
        drafted_tps=p.get("drafted throughput"),
        accepted_tokens=_int_or_none(p.get("accepted", p.get("number of accepted tokens"))),
        drafted_tokens=_int_or_none(p.get("drafted", p.get("number of draft tokens"))),
        per_position=tuple(float(x) for x in per_pos.group("rates").split(",")) if per_pos else None,
        acceptance_rate_pct=rate,
    )


def parse_engine_stats(line: str) -> EngineStatsLog | None:
    """Read a periodic ``Engine NNN:`` throughput line, or None if the line is not one."""
    msg = strip_prefix(line)
    head = _ENGINE_HEAD.search(msg)
    if head is None or "throughput" not in msg:
        return None
    p = _pairs(msg[head.end() :])
    device = next((d for d in ("GPU", "CPU", "XPU", "TPU") if f"{d} KV cache usage" in msg), None)
    kv = p.get(f"{device.lower()} kv cache usage") if device else p.get("kv cache usage")
    return EngineStatsLog(
        line=line,
        engine=int(head.group("engine")) if head.group("engine") else None,
        prompt_tps=p.get("avg prompt throughput"),
        generation_tps=p.get("avg generation throughput"),
        running=_int_or_none(p.get("running")),
        waiting=_int_or_none(p.get("waiting")),
        preemptions=_int_or_none(p.get("preemptions")),
        kv_cache_usage_pct=kv,
        kv_cache_device=device,
        prefix_cache_hit_pct=p.get("prefix cache hit rate"),
    )


def parse_warning(line: str) -> WarningLog | None:
    """A WARNING/ERROR/CRITICAL line as a :class:`WarningLog`, else None."""
    level = line_level(line)
    if level not in {"WARNING", "ERROR", "CRITICAL"}:
        return None
    return WarningLog(line=line, level=level, message=strip_prefix(line))


def parse_runtime_stat(line: str) -> SpecDecodingLog | EngineStatsLog | WarningLog | None:
    """Whichever runtime reading a line carries: spec-decoding stats, engine stats or a warning."""
    return parse_spec_decoding(line) or parse_engine_stats(line) or parse_warning(line)
