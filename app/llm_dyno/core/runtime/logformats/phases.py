"""Start-up phase events (weights, compile, graphs, KV cache, server up) and the phase tracker."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from llm_dyno.core.runtime.base import ServerState
from llm_dyno.core.runtime.logformats.prefix import _number, strip_prefix

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
    (EventKind.WEIGHTS_LOADED, re.compile(r"Loading weights took (?P<seconds>\d+(?:\.\d+)?) ?s"), _groups),
    (EventKind.DRAFTER_LOADING, re.compile(r"Loading drafter model"), _groups),
    (
        EventKind.MODEL_LOADED,
        re.compile(
            r"(?:Model loading|Loading model weights) took (?P<gib>\d+(?:\.\d+)?) ?(?P<unit>GiB|GB)"
            r"(?: memory)?(?: and (?P<seconds>\d+(?:\.\d+)?) ?s)?"
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
        re.compile(r"torch\.compile (?:takes|took) (?P<seconds>\d+(?:\.\d+)?) ?s in total"),
        _groups,
    ),
    (EventKind.GRAPHS_PROGRESS, re.compile(r"Capturing CUDA graphs?\b"), _tqdm_values),
    (
        EventKind.GRAPHS_CAPTURED,
        re.compile(
            r"Graph capturing finished in (?P<seconds>\d+(?:\.\d+)?) ?secs?"
            r"(?:, took (?P<gib>\d+(?:\.\d+)?) GiB)?"
        ),
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
    (
        EventKind.KV_CACHE_MEMORY,
        re.compile(r"Available KV cache memory: (?P<gib>\d+(?:\.\d+)?) ?GiB"),
        _groups,
    ),
    (EventKind.KV_CACHE_SIZE, re.compile(r"(?:GPU|CPU)? ?KV cache size: (?P<tokens>[\d,]+) tokens"), _groups),
    (
        EventKind.MAX_CONCURRENCY,
        re.compile(
            r"Maximum concurrency for (?P<tokens>[\d,]+) tokens per request: (?P<factor>\d+(?:\.\d+)?)x"
        ),
        _groups,
    ),
    (
        EventKind.ENGINE_INITIALIZED,
        re.compile(r"init engine \(.*?\) took (?P<seconds>\d+(?:\.\d+)?) ?s"),
        _groups,
    ),
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
