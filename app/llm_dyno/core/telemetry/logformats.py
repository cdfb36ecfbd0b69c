"""The one module that knows vLLM's log-line formats.

Lines carry a prefix that changed between versions (``(EngineCore pid=167) INFO 05-03 18:41:34
[file.py:123] …``, ``(EngineCore_DP0 pid=…)``, ``(APIServer pid=1) INFO:     …`` from uvicorn, or
none at all for tqdm bars). Everything here matches on the message text, key by key, and allows any
prefix, so that a reworded neighbour or a new field does not break a match.

Three kinds of reading live here:

* :func:`line_level` / :func:`strip_prefix`: the level and the bare message of a line.
* :func:`parse_event`: start-up phase events (weights, compile, graphs, KV cache, server up) as
  :class:`LogEvent` values; :class:`PhaseTracker` turns them into state updates for a handle.
* :func:`classify_failure`: why a start failed, from a tail of lines (see ``failures`` below).

Runtime statistics (``SpecDecoding metrics``, ``Engine 000: Avg prompt throughput``) belong here
too, in the section marked "runtime statistics".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from llm_dyno.core.runtime.base import FailureKind, FailureReason, ServerState

# ---- prefix and level ------------------------------------------------------------------------------

# "(EngineCore_DP0 pid=268) " or "(APIServer pid=1) "; several may nest in multi-process setups.
_PROC_PREFIX = re.compile(r"^(?:\s*\([A-Za-z_][\w.-]*(?: pid=\d+)?\)\s*)+")
# "INFO 05-03 18:41:34 [core.py:708] " (vLLM logger) or "INFO:     " (uvicorn).
_LEVEL_HEAD = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)"
    r"(?:\s+\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s*(?:\[[^\]]*\]\s*)?|:\s+)"
)
# glog-style lines from torch: "W1130 04:21:59.774000 6188 torch/_library/triton.py:53] …"
_GLOG_HEAD = re.compile(r"^(?P<level>[DIWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[^\]]*\]\s*")
_GLOG_LEVELS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


def line_level(line: str) -> str | None:
    """The log level of a line (DEBUG, INFO, WARNING, ERROR, CRITICAL), or None when it has none."""
    rest = _PROC_PREFIX.sub("", line, count=1)
    m = _LEVEL_HEAD.match(rest)
    if m:
        level = m.group("level")
        return "WARNING" if level == "WARN" else level
    g = _GLOG_HEAD.match(rest)
    return _GLOG_LEVELS[g.group("level")] if g else None


def strip_prefix(line: str) -> str:
    """The message of a line without its process tag, level, timestamp and source location."""
    rest = _PROC_PREFIX.sub("", line, count=1)
    m = _LEVEL_HEAD.match(rest) or _GLOG_HEAD.match(rest)
    return rest[m.end() :] if m else rest.strip()


def _number(text: str) -> float:
    """A number as vLLM prints it, thousand separators allowed."""
    return float(text.replace(",", ""))


# ---- start-up phase events -------------------------------------------------------------------------


class EventKind(StrEnum):
    """What a start-up log line tells."""

    MODEL_LOADING_STARTED = "model_loading_started"  # "Starting to load model …"
    WEIGHTS_PROGRESS = "weights_progress"  # tqdm bar of checkpoint shards
    WEIGHTS_LOADED = "weights_loaded"  # "Loading weights took N seconds"
    DRAFTER_LOADING = "drafter_loading"
    MODEL_LOADED = "model_loaded"  # "Model loading took X GiB … and N seconds"
    COMPILE_STARTED = "compile_started"
    COMPILE_FINISHED = "compile_finished"  # "torch.compile took N s in total"
    GRAPHS_PROGRESS = "graphs_progress"  # tqdm bar "Capturing CUDA graphs …"
    GRAPHS_CAPTURED = "graphs_captured"
    CUDAGRAPH_DOWNGRADE = "cudagraph_downgrade"  # a warning, not a failure
    KV_CACHE_MEMORY = "kv_cache_memory"  # "Available KV cache memory: N GiB"
    KV_CACHE_SIZE = "kv_cache_size"  # "GPU KV cache size: N tokens"
    MAX_CONCURRENCY = "max_concurrency"
    ENGINE_INITIALIZED = "engine_initialized"
    SERVER_STARTING = "server_starting"  # "Starting vLLM API server on …"
    STARTUP_COMPLETE = "startup_complete"  # uvicorn "Application startup complete."


@dataclass(frozen=True)
class LogEvent:
    """One recognised log line: its kind, the values read from it, and the line itself."""

    kind: EventKind
    line: str
    values: dict[str, float | str] = field(default_factory=dict)


_TQDM = re.compile(r"(?P<pct>\d{1,3})%(?: Completed)?\s*\|[^|]*?\|?\s*(?P<done>\d+)/(?P<total>\d+)")
_TQDM_PCT = re.compile(r"(?P<pct>\d{1,3})%")
_PatternFn = Callable[[str, "re.Match[str]"], dict[str, float | str]]


def _tqdm_values(msg: str, _m: re.Match[str]) -> dict[str, float | str]:
    full = _TQDM.search(msg)
    if full:
        done, total = int(full.group("done")), int(full.group("total"))
        fraction = done / total if total else float(full.group("pct")) / 100
        return {"fraction": fraction, "done": done, "total": total}
    pct = _TQDM_PCT.search(msg)
    return {"fraction": float(pct.group("pct")) / 100} if pct else {}


def _groups(_msg: str, m: re.Match[str]) -> dict[str, float | str]:
    out: dict[str, float | str] = {}
    for key, value in m.groupdict().items():
        if value is None:
            continue
        try:
            out[key] = _number(value)
        except ValueError:
            out[key] = value
    return out


# Ordered: the first pattern that matches a message wins. Each names only what it must match.
_EVENT_PATTERNS: list[tuple[EventKind, re.Pattern[str], _PatternFn]] = [
    (EventKind.MODEL_LOADING_STARTED, re.compile(r"Starting to load model"), _groups),
    (EventKind.WEIGHTS_PROGRESS, re.compile(r"Loading (?:\w+ )?checkpoint shards:"), _tqdm_values),
    (EventKind.WEIGHTS_LOADED, re.compile(r"Loading weights took (?P<seconds>[\d.]+) ?s"), _groups),
    (EventKind.DRAFTER_LOADING, re.compile(r"Loading drafter model"), _groups),
    (
        EventKind.MODEL_LOADED,
        re.compile(
            r"(?:Model loading|Loading model weights) took (?P<gib>[\d.]+) ?(?P<unit>GiB|GB)"
            r"(?: memory)?(?: and (?P<seconds>[\d.]+) ?s)?"
        ),
        _groups,
    ),
    (
        EventKind.COMPILE_STARTED,
        re.compile(r"for vLLM's torch\.compile|Dynamo bytecode transform time|Compiling a graph for"),
        _groups,
    ),
    (
        EventKind.COMPILE_FINISHED,
        re.compile(r"torch\.compile (?:takes|took) (?P<seconds>[\d.]+) ?s in total"),
        _groups,
    ),
    (EventKind.GRAPHS_PROGRESS, re.compile(r"Capturing CUDA graphs?\b"), _tqdm_values),
    (
        EventKind.GRAPHS_CAPTURED,
        re.compile(r"Graph capturing finished in (?P<seconds>[\d.]+) ?secs?(?:, took (?P<gib>[\d.]+) GiB)?"),
        _groups,
    ),
    (
        EventKind.CUDAGRAPH_DOWNGRADE,
        re.compile(
            r"CUDAGraphMode\.(?P<requested>\w+) is not supported with (?P<reason>.*?);"
            r"\s*setting cudagraph_mode=(?P<mode>\w+)"
        ),
        _groups,
    ),
    (EventKind.KV_CACHE_MEMORY, re.compile(r"Available KV cache memory: (?P<gib>[\d.]+) ?GiB"), _groups),
    (EventKind.KV_CACHE_SIZE, re.compile(r"(?:GPU|CPU)? ?KV cache size: (?P<tokens>[\d,]+) tokens"), _groups),
    (
        EventKind.MAX_CONCURRENCY,
        re.compile(r"Maximum concurrency for (?P<tokens>[\d,]+) tokens per request: (?P<factor>[\d.]+)x"),
        _groups,
    ),
    (EventKind.ENGINE_INITIALIZED, re.compile(r"init engine \(.*?\) took (?P<seconds>[\d.]+) ?s"), _groups),
    (
        EventKind.SERVER_STARTING,
        re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>\S+)"),
        _groups,
    ),
    (EventKind.STARTUP_COMPLETE, re.compile(r"Application startup complete\."), _groups),
]


def parse_event(line: str) -> LogEvent | None:
    """The start-up event a line reports, or None. Events on one line are rare; the first wins."""
    msg = strip_prefix(line)
    for kind, pattern, values in _EVENT_PATTERNS:
        m = pattern.search(msg)
        if m:
            return LogEvent(kind, line, values(msg, m))
    return None


def parse_events(line: str) -> list[LogEvent]:
    """Every event on a line (newer vLLM logs KV size and concurrency on one line)."""
    msg = strip_prefix(line)
    out: list[LogEvent] = []
    for kind, pattern, values in _EVENT_PATTERNS:
        m = pattern.search(msg)
        if m:
            out.append(LogEvent(kind, line, values(msg, m)))
    return out


# ---- phase tracking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseUpdate:
    """A change a handle should publish: the state, a one-line detail and progress within it."""

    state: ServerState
    detail: str
    progress: float | None = None


_PHASE_ORDER = {
    ServerState.STARTING: 0,
    ServerState.LOADING_WEIGHTS: 1,
    ServerState.COMPILING: 2,
    ServerState.CAPTURING_GRAPHS: 3,
}


class PhaseTracker:
    """Follows start-up from log lines, one at a time, and reports phase changes.

    Phases only move forward (a drafter model loading after compilation does not send the server
    back to LOADING_WEIGHTS). READY is not decided here: the HTTP readiness check decides it;
    ``startup_complete`` says the log claimed it. Facts seen on the way (model memory, KV cache
    tokens, CUDA-graph downgrades) are kept for display and diagnosis.
    """

    def __init__(self) -> None:
        self.state = ServerState.STARTING
        self.detail = "starting"
        self.progress: float | None = None
        self.model_gib: float | None = None
        self.kv_cache_tokens: int | None = None
        self.server_url: str | None = None
        self.startup_complete = False
        self.warnings: list[LogEvent] = []  # e.g. CUDA-graph downgrades
        self.events: list[LogEvent] = []

    def feed(self, line: str) -> PhaseUpdate | None:
        """Consume a line; return an update when the state, detail or progress changed."""
        update: PhaseUpdate | None = None
        for event in parse_events(line):
            self.events.append(event)
            update = self._apply(event) or update
        return update

    def _move(self, state: ServerState, detail: str, progress: float | None = None) -> PhaseUpdate | None:
        if _PHASE_ORDER.get(state, 99) < _PHASE_ORDER.get(self.state, 0):
            return None
        if (state, detail, progress) == (self.state, self.detail, self.progress):
            return None
        self.state, self.detail, self.progress = state, detail, progress
        return PhaseUpdate(state, detail, progress)

    def _apply(self, ev: LogEvent) -> PhaseUpdate | None:
        v = ev.values
        k = ev.kind
        if k is EventKind.MODEL_LOADING_STARTED:
            return self._move(ServerState.LOADING_WEIGHTS, "loading model", 0.0)
        if k is EventKind.WEIGHTS_PROGRESS:
            frac = float(v.get("fraction", 0.0))
            if "total" in v:
                detail = f"loading checkpoint shards {int(v['done'])}/{int(v['total'])}"
            else:
                detail = f"loading checkpoint shards {round(frac * 100)}%"
            return self._move(ServerState.LOADING_WEIGHTS, detail, frac)
        if k is EventKind.WEIGHTS_LOADED:
            return self._move(ServerState.LOADING_WEIGHTS, f"weights loaded in {v['seconds']:.1f} s", 1.0)
        if k is EventKind.DRAFTER_LOADING:
            return self._move(ServerState.LOADING_WEIGHTS, "loading drafter model")
        if k is EventKind.MODEL_LOADED:
            self.model_gib = float(v["gib"])
            return self._move(
                ServerState.LOADING_WEIGHTS, f"model loaded ({self.model_gib:g} {v['unit']})", 1.0
            )
        if k is EventKind.COMPILE_STARTED:
            return self._move(ServerState.COMPILING, "torch.compile")
        if k is EventKind.COMPILE_FINISHED:
            return self._move(ServerState.COMPILING, f"torch.compile took {v['seconds']:.1f} s", 1.0)
        if k is EventKind.GRAPHS_PROGRESS:
            graphs = float(v["fraction"]) if "fraction" in v else None
            return self._move(ServerState.CAPTURING_GRAPHS, "capturing CUDA graphs", graphs)
        if k is EventKind.GRAPHS_CAPTURED:
            return self._move(
                ServerState.CAPTURING_GRAPHS, f"CUDA graphs captured in {v['seconds']:g} s", 1.0
            )
        if k is EventKind.CUDAGRAPH_DOWNGRADE:
            self.warnings.append(ev)
            return None
        if k is EventKind.KV_CACHE_SIZE:
            self.kv_cache_tokens = int(v["tokens"])
            return None
        if k is EventKind.SERVER_STARTING:
            self.server_url = str(v["url"])
            return self._move(self.state, "starting API server")
        if k is EventKind.STARTUP_COMPLETE:
            self.startup_complete = True
            return self._move(self.state, "API server up; waiting for /health")
        return None


# ---- failures --------------------------------------------------------------------------------------
# The real cause of a failed start is often far above the last line ("Engine core initialization
# failed. See root cause above."), so rules search the whole tail given (keep at least 250 lines).


@dataclass(frozen=True)
class _Rule:
    kind: FailureKind
    pattern: re.Pattern[str]
    summary: Callable[[re.Match[str]], str]
    hint: Callable[[re.Match[str]], str]
    details: Callable[[re.Match[str]], dict[str, object]] = lambda _m: {}


def _int(text: str) -> int:
    return int(text.replace(",", ""))


_RULES: list[_Rule] = [
    _Rule(
        FailureKind.UNRECOGNIZED_ARGUMENTS,
        re.compile(r"error: unrecognized arguments: (?P<args>.+)$"),
        lambda m: f"vLLM does not know these arguments: {m.group('args').strip()}",
        lambda m: (
            "Remove or correct them in the profile's args (check the spelling against this vLLM version). "
            + (
                "The image's entrypoint already is `vllm serve`: do not repeat 'serve' in the command."
                if "serve" in m.group("args").split()
                else ""
            )
        ).strip(),
        lambda m: {"arguments": m.group("args").split()},
    ),
    _Rule(
        FailureKind.PORT_IN_USE,
        # The phrase anywhere; the port when the line names the address ("('0.0.0.0', 8000)").
        re.compile(r"^(?=.*address already in use)(?:.*?\('?[^',()]*'?, (?P<port>\d+)\))?", re.IGNORECASE),
        lambda m: (
            "the server's port is already in use" + (f" (port {m.group('port')})" if m.group("port") else "")
        ),
        lambda _m: "Another program listens on that port: stop it, or change --port in the profile.",
        lambda m: {"port": int(m.group("port"))} if m.group("port") else {},
    ),
    _Rule(
        FailureKind.KV_CACHE_TOO_SMALL,
        re.compile(r"max seq len \((?P<want>[\d,]+)\).*?estimated maximum model length is (?P<n>[\d,]+)"),
        lambda m: (
            f"the KV cache cannot hold one request of max-model-len {_int(m.group('want')):,}; "
            f"it fits at most {_int(m.group('n')):,} tokens"
        ),
        lambda m: (
            f"Lower --max-model-len to {_int(m.group('n'))} or less, or give the KV cache more memory "
            "(raise --gpu-memory-utilization; on CPU raise VLLM_CPU_KVCACHE_SPACE)."
        ),
        lambda m: {"max_model_len": _int(m.group("want")), "estimated_max_model_len": _int(m.group("n"))},
    ),
    _Rule(
        FailureKind.NO_KV_MEMORY,
        re.compile(r"No available memory for the cache blocks"),
        lambda _m: "no memory is left for the KV cache after loading the model",
        lambda _m: "Raise --gpu-memory-utilization, or use a smaller or more quantized model.",
    ),
    _Rule(
        FailureKind.GPU_BUSY,
        re.compile(
            r"Free memory on device(?: \S+)? \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on startup"
            r" is less than desired GPU memory utilization \((?P<util>[\d.]+), (?P<want>[\d.]+) GiB\)"
        ),
        lambda m: (
            f"only {m.group('free')} of {m.group('total')} GiB GPU memory is free; "
            f"--gpu-memory-utilization {m.group('util')} wants {m.group('want')} GiB"
        ),
        lambda _m: (
            "Another process holds GPU memory (see nvidia-smi): stop it, or lower --gpu-memory-utilization "
            "to fit in the free memory."
        ),
        lambda m: {k: float(v) for k, v in m.groupdict().items()},
    ),
    _Rule(
        FailureKind.CUDA_OOM,
        re.compile(r"(?:CUDA out of memory|OutOfMemoryError)(?:.*?Tried to allocate (?P<size>[\d.]+ \w+))?"),
        lambda m: (
            "CUDA out of memory" + (f" (tried to allocate {m.group('size')})" if m.group("size") else "")
        ),
        lambda _m: (
            "Lower --gpu-memory-utilization, --max-num-seqs or --max-num-batched-tokens, shorten "
            "--max-model-len, or use a smaller or more quantized model."
        ),
    ),
    _Rule(
        FailureKind.MODEL_LEN_EXCEEDS_MODEL,
        re.compile(
            r"max_model_len \((?P<want>[\d,]+)\) is greater than the derived max_model_len \((?P<why>[^)]*)\)"
        ),
        lambda m: (
            f"--max-model-len {_int(m.group('want')):,} is longer than the model supports ({m.group('why')})"
        ),
        lambda _m: (
            "Lower --max-model-len to the model's limit, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in the "
            "profile's env if you know the model handles longer contexts."
        ),
        lambda m: {"max_model_len": _int(m.group("want"))},
    ),
]

_ENGINE_FAILED = re.compile(r"Engine core initialization failed")
# "ValueError: …", "torch.OutOfMemoryError: …", "pydantic_core._pydantic_core.ValidationError: …"
_ERROR_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*(?P<type>[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit))(?::\s|$)"
)
_VALUE_ERROR_DETAIL = re.compile(r"^\s*Value error, (?P<msg>.+)")


def _error_messages(lines: Sequence[str]) -> list[tuple[int, str]]:
    """(index, message) of lines that state an exception, with pydantic's detail line folded in."""
    out: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        msg = strip_prefix(line)
        if not _ERROR_LINE.match(msg):
            continue
        if "ValidationError" in msg:
            for nxt in lines[i + 1 : i + 4]:
                d = _VALUE_ERROR_DETAIL.match(strip_prefix(nxt))
                if d:
                    msg = f"{msg.split(':', 1)[0]}: {d.group('msg')}"
                    break
        out.append((i, msg))
    return out


def classify_failure(lines: Sequence[str], exit_code: int | None = None) -> FailureReason:
    """Why a server failed, from the tail of its log (give it at least the last 250 lines).

    Known causes are tried first (searching from the end); then ``Engine core initialization failed``
    with the last exception line above it as the root cause; then the last exception line at all;
    else the exit code alone.
    """
    messages = [strip_prefix(line) for line in lines]
    # Known causes are stated by errors and tracebacks; a warning may quote them harmlessly
    # (e.g. "User-specified max_model_len … is greater than …" when the override is allowed).
    quiet = [line_level(line) in ("DEBUG", "INFO", "WARNING") for line in lines]
    for rule in _RULES:
        for i in range(len(messages) - 1, -1, -1):
            m = None if quiet[i] else rule.pattern.search(messages[i])
            if m:
                return FailureReason(
                    rule.kind,
                    rule.summary(m),
                    rule.hint(m),
                    _excerpt(lines, i),
                    exit_code,
                    dict(rule.details(m)),
                )
    errors = _error_messages(lines)
    engine_idx = next(
        (i for i in range(len(messages) - 1, -1, -1) if _ENGINE_FAILED.search(messages[i])), None
    )
    if engine_idx is not None:
        root = [(i, msg) for i, msg in errors if i < engine_idx and not _ENGINE_FAILED.search(msg)]
        if root:
            i, msg = root[-1]
            return FailureReason(
                FailureKind.ENGINE_INIT_FAILED,
                f"the engine failed to start: {msg}",
                "Fix the root cause shown: the profile's flags or model may not fit this vLLM or hardware.",
                (*_excerpt(lines, i), lines[engine_idx]),
                exit_code,
                {"root_cause": msg},
            )
        return FailureReason(
            FailureKind.ENGINE_INIT_FAILED,
            "the engine failed to start (no root cause found in the log tail)",
            "Read the full log: the cause may lie further up.",
            (lines[engine_idx],),
            exit_code,
        )
    if errors:
        i, msg = errors[-1]
        return FailureReason(
            FailureKind.UNKNOWN, msg, "Read the log around this line.", _excerpt(lines, i), exit_code
        )
    tail = tuple(line for line in lines[-5:] if line.strip())
    code = "" if exit_code is None else f" with exit code {exit_code}"
    return FailureReason(
        FailureKind.EXITED, f"the server exited{code}", "Read the log for the cause.", tail, exit_code
    )


def _excerpt(lines: Sequence[str], index: int) -> tuple[str, ...]:
    """The line at ``index``, with the exception header above it when it continues one (pydantic)."""
    head = lines[index - 1] if index > 0 and _ERROR_LINE.match(strip_prefix(lines[index - 1])) else None
    return (head, lines[index]) if head else (lines[index],)


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
_PER_POS_RATES = re.compile(r"Per-position acceptance rate:\s*(?P<rates>[\d.]+(?:\s*,\s*[\d.]+)*)")


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


# ==== diagnosis warnings (added by the diagnose work: core/diagnose reads these) ====================
# Warnings that explain a performance gap rather than a failure. Matched on the bare message, any prefix.


class DiagnosticKind(StrEnum):
    """A configuration warning vLLM logs at start-up that costs speed."""

    ENFORCE_EAGER = "enforce_eager"  # "Enforce eager set, disabling torch.compile, CUDAGraphs …"
    SCHEDULED_TOKENS_CAPPED = "scheduled_tokens_capped"  # "max_num_scheduled_tokens is set to N based on …"
    SCHEDULED_TOKENS_NONE = "scheduled_tokens_none"  # "… set to -1792, which does not allow any tokens …"


@dataclass(frozen=True)
class DiagnosticLog:
    """A recognised diagnostic warning: its kind, the values read from it, and the line itself."""

    kind: DiagnosticKind
    line: str
    values: dict[str, float | str] = field(default_factory=dict)


_DIAGNOSTIC_PATTERNS: list[tuple[DiagnosticKind, re.Pattern[str]]] = [
    (DiagnosticKind.ENFORCE_EAGER, re.compile(r"Enforce eager set, disabling torch\.compile")),
    (
        DiagnosticKind.SCHEDULED_TOKENS_NONE,
        re.compile(
            r"max_num_scheduled_tokens is set to (?P<tokens>-?[\d,]+), which does not allow any tokens"
            r"|does not have enough slots to schedule a token and support the speculative decoding"
        ),
    ),
    (
        DiagnosticKind.SCHEDULED_TOKENS_CAPPED,
        re.compile(r"max_num_scheduled_tokens is set to (?P<tokens>-?[\d,]+) based on the speculative"),
    ),
]


def parse_diagnostic(line: str) -> DiagnosticLog | None:
    """The diagnostic warning a line carries (see :class:`DiagnosticKind`), or None."""
    msg = strip_prefix(line)
    for kind, pattern in _DIAGNOSTIC_PATTERNS:
        m = pattern.search(msg)
        if m:
            return DiagnosticLog(kind, line, _groups(msg, m))
    return None
