"""What a diagnosis reports: findings, the evidence behind each, and the change that would fix it.

A :class:`Finding` is a plain immutable record so that the CLI prints it, the GUI lists it and a
test asserts on it without any of them knowing which rule produced it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from llm_dyno.core.profiles.diff import DiffRow


class Severity(StrEnum):
    """How much a finding is likely to matter, most important first."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"


SEVERITY_ORDER = {s: i for i, s in enumerate(Severity)}


@dataclass(frozen=True)
class LogEvidence:
    """A log line, with its 1-based line number in the log it came from (None when unknown)."""

    text: str
    line_no: int | None = None
    label: str = "log:"  # what the number follows: "log:" ("log:42"), "post line " ("post line 42")

    def describe(self) -> str:
        """``log:42: …`` (``post line 42: …`` for a pasted post) for humans."""
        where = f"{self.label}{self.line_no}" if self.line_no is not None else self.label.rstrip(": ")
        return f"{where}: {self.text.strip()}"


@dataclass(frozen=True)
class MetricEvidence:
    """A measured or configured value, optionally next to the reference's value for it."""

    name: str
    value: float | str | None
    unit: str = ""
    reference: float | str | None = None
    source: str = ""  # "nvml", "/metrics", "benchmark", "profile", …

    def describe(self) -> str:
        """``power_w = 690 W (reference 700 W) [nvml]`` for humans."""
        text = f"{self.name} = {_fmt(self.value)}{' ' + self.unit if self.unit else ''}"
        if self.reference is not None:
            text += f" (reference {_fmt(self.reference)}{' ' + self.unit if self.unit else ''})"
        return text + (f" [{self.source}]" if self.source else "")


@dataclass(frozen=True)
class DiffEvidence:
    """A row of the semantic diff between this profile (left) and the reference's (right)."""

    row: DiffRow

    def describe(self) -> str:
        """``container image: a → b`` for humans."""
        r = self.row
        return f"{r.group} {r.key}: {r.left if r.left is not None else '(none)'} → " + (
            r.right if r.right is not None else "(none)"
        )


Evidence = LogEvidence | MetricEvidence | DiffEvidence


def _fmt(value: float | str | None) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


class ChangeKind(StrEnum):
    """A profile edit that :func:`llm_dyno.core.diagnose.apply.apply_finding` knows how to make."""

    REMOVE_FLAG = "remove_flag"  # key: canonical flag name
    SET_FLAG = "set_flag"  # key: canonical flag name, value: its value
    ADD_VOLUME = "add_volume"  # value: "source:target[:mode]"
    SET_ENV = "set_env"  # key: variable, value: its value
    SET_POWER_LIMIT = "set_power_limit"  # value: watts
    SET_IMAGE = "set_image"  # value: image reference (tag or @sha256 digest)


@dataclass(frozen=True)
class ProfileChange:
    """One machine-applicable edit of a profile."""

    kind: ChangeKind
    key: str = ""
    value: str | None = None

    def describe(self) -> str:
        """``remove --enforce-eager`` for humans."""
        k = self.kind
        if k is ChangeKind.REMOVE_FLAG:
            return f"remove --{self.key}"
        if k is ChangeKind.SET_FLAG:
            return f"set --{self.key} {self.value}"
        if k is ChangeKind.ADD_VOLUME:
            return f"add volume {self.value}"
        if k is ChangeKind.SET_ENV:
            return f"set env {self.key}={self.value}"
        if k is ChangeKind.SET_POWER_LIMIT:
            return f"set power limit {self.value} W"
        return f"use image {self.value}"


@dataclass(frozen=True)
class Impact:
    """The expected effect of fixing a finding.

    ``tps_pct`` is an estimated share of decode tokens/s the problem costs (None when it cannot be
    estimated); ``startup_s`` seconds added to each start; ``security`` marks exposure rather than speed.
    ``basis`` says where the estimate comes from, so a user can weigh it.
    """

    tps_pct: float | None = None
    startup_s: float | None = None
    security: bool = False
    basis: str = ""

    def describe(self) -> str:
        """``~30 % TPS`` / ``+65 s per start`` / ``security`` for humans."""
        parts: list[str] = []
        if self.security:
            parts.append("security")
        if self.tps_pct is not None:
            parts.append(f"~{self.tps_pct:.0f} % TPS")
        if self.startup_s is not None:
            parts.append(f"+{self.startup_s:.0f} s per start")
        return ", ".join(parts) or "unknown"


@dataclass(frozen=True)
class Finding:
    """One explanation of a gap: what, how much it likely costs, the evidence, and what to change."""

    id: str
    title: str
    severity: Severity
    impact: Impact
    evidence: tuple[Evidence, ...]
    advice: str
    changes: tuple[ProfileChange, ...] = ()
    fix_label: str = ""  # short words for the name of a fixed copy, e.g. "compile cache"

    @property
    def applicable(self) -> bool:
        """Whether :func:`apply_finding` can make the change on a copy of the profile."""
        return bool(self.changes)

    def rank_key(self) -> tuple[int, float, float]:
        """Sort key: severity first, then the estimated TPS share, then start-up seconds."""
        return (
            SEVERITY_ORDER[self.severity],
            -(self.impact.tps_pct or 0.0),
            -(self.impact.startup_s or 0.0),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "id": self.id,
            "title": self.title,
            "severity": self.severity.value,
            "impact": {
                "tps_pct": self.impact.tps_pct,
                "startup_s": self.impact.startup_s,
                "security": self.impact.security,
                "basis": self.impact.basis,
                "summary": self.impact.describe(),
            },
            "evidence": [e.describe() for e in self.evidence],
            "advice": self.advice,
            "changes": [{"kind": c.kind.value, "key": c.key, "value": c.value} for c in self.changes],
        }
