"""Explain the gap: rules over profile, environment, logs, metrics, GPU readings and results.

Entry points: :func:`diagnose` (ranked :class:`Finding` values), :func:`roofline` (the physical decode
ceiling), :func:`apply_finding` (a fixed copy of a profile) and the references in ``references``.

The roofline loads with the package (the dashboard plots it from the start); the rules, the engine
and their inputs load when one of their names is first used (PEP 562), not at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_dyno.core.diagnose.apply import ApplyError, apply_finding
    from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
    from llm_dyno.core.diagnose.engine import Diagnosis, diagnose
    from llm_dyno.core.diagnose.evidence import Finding, Severity
    from llm_dyno.core.diagnose.inputs import Environment, LaunchLog, Measured

# imported here, not lazily: the dashboard plots the roofline from the start (it lives in bench)
from llm_dyno.core.bench.roofline import Roofline, decode_ceiling, roofline

_WHERE = {
    "ApplyError": "apply",
    "apply_finding": "apply",
    "Diagnosis": "engine",
    "diagnose": "engine",
    "Finding": "evidence",
    "Severity": "evidence",
    "DiagnosisInput": "diagnosis_input",
    "Environment": "inputs",
    "LaunchLog": "inputs",
    "Measured": "inputs",
}

__all__ = [
    "ApplyError",
    "Diagnosis",
    "DiagnosisInput",
    "Environment",
    "Finding",
    "LaunchLog",
    "Measured",
    "Roofline",
    "Severity",
    "apply_finding",
    "decode_ceiling",
    "diagnose",
    "roofline",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
