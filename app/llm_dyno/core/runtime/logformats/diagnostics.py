"""Warnings that explain a performance gap rather than a failure (read by core/diagnose)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from llm_dyno.core.runtime.logformats.phases import _groups
from llm_dyno.core.runtime.logformats.prefix import strip_prefix

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
