"""Line prefixes and levels: what every other reader strips before matching a message."""

from __future__ import annotations

import re

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


# uvicorn's access line: `INFO:     127.0.0.1:57654 - "GET /metrics HTTP/1.1" 200 OK`
_POLL_ACCESS = re.compile(r'"GET /(?:metrics|health)/?(?:\?\S*)? HTTP/[\d.]+" \d{3}')


def is_poll_access_line(line: str) -> bool:
    """Whether a line is the server's access-log entry for a ``GET /metrics`` or ``GET /health``: the
    app polls both (telemetry, readiness), so they are noise in the log a user reads."""
    return _POLL_ACCESS.search(line) is not None
