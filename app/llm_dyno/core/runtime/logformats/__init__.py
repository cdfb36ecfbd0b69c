"""The one place that knows vLLM's log-line formats.

Lines carry a prefix that changed between versions (``(EngineCore pid=167) INFO 05-03 18:41:34
[file.py:123] …``, ``(EngineCore_DP0 pid=…)``, ``(APIServer pid=1) INFO:     …`` from uvicorn, or
none at all for tqdm bars). Everything here matches on the message text, key by key, and allows any
prefix, so that a reworded neighbour or a new field does not break a match.

Three kinds of reading live here:

* :func:`line_level` / :func:`strip_prefix`: the level and the bare message of a line.
* :func:`parse_event`: start-up phase events (weights, compile, graphs, KV cache, server up) as
  :class:`LogEvent` values; :class:`PhaseTracker` turns them into state updates for a handle.
* :func:`parse_boot_facts`: what the engine resolved (CUDA-graph mode, capture sizes, attention
  backend, KV dtype, version, patches) for the boot-log fingerprint.
* :func:`classify_failure`: why a start failed, from a tail of lines (see ``failures`` below).

Runtime statistics (``SpecDecoding metrics``, ``Engine 000: Avg prompt throughput``) belong here
too, in the section marked "runtime statistics".
"""

from __future__ import annotations

from llm_dyno.core.runtime.logformats.bootfacts import BootFactKind, BootLine, parse_boot_facts
from llm_dyno.core.runtime.logformats.diagnostics import (
    DiagnosticKind,
    DiagnosticLog,
    parse_diagnostic,
)
from llm_dyno.core.runtime.logformats.failures import (
    classify_failure,
)
from llm_dyno.core.runtime.logformats.phases import (
    EventKind,
    LogEvent,
    PhaseTracker,
    PhaseUpdate,
    parse_event,
    parse_events,
)
from llm_dyno.core.runtime.logformats.prefix import (
    is_poll_access_line,
    line_level,
    strip_prefix,
)
from llm_dyno.core.runtime.logformats.runtime import (
    EngineStatsLog,
    SpecDecodingLog,
    WarningLog,
    parse_engine_stats,
    parse_runtime_stat,
    parse_spec_decoding,
    parse_warning,
)

__all__ = [
    "BootFactKind",
    "BootLine",
    "DiagnosticKind",
    "DiagnosticLog",
    "EngineStatsLog",
    "EventKind",
    "LogEvent",
    "PhaseTracker",
    "PhaseUpdate",
    "SpecDecodingLog",
    "WarningLog",
    "classify_failure",
    "is_poll_access_line",
    "line_level",
    "parse_boot_facts",
    "parse_diagnostic",
    "parse_engine_stats",
    "parse_event",
    "parse_events",
    "parse_runtime_stat",
    "parse_spec_decoding",
    "parse_warning",
    "strip_prefix",
]
