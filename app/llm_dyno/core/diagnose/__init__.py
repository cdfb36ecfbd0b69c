"""Explain the gap: rules over profile, environment, logs, metrics, GPU readings and results.

Entry points: :func:`diagnose` (ranked :class:`Finding` values), :func:`roofline` (the physical decode
ceiling), :func:`apply_finding` (a fixed copy of a profile) and the references in ``references``.
"""

from llm_dyno.core.diagnose.apply import ApplyError, apply_finding
from llm_dyno.core.diagnose.engine import Diagnosis, diagnose
from llm_dyno.core.diagnose.evidence import Finding, Severity
from llm_dyno.core.diagnose.inputs import DiagnosisInput, Environment, LaunchLog, Measured
from llm_dyno.core.diagnose.roofline import Roofline, decode_ceiling, roofline

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
