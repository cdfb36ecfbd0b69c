"""The registry of diagnosis rules. Each rule is a small function: input in, zero or more findings out.

Rules register themselves where they are written (``@rule(id, looks_at)``, see
:mod:`llm_dyno.core.diagnose.registry`); :data:`RULES` holds them module by module in the order of
:data:`MODULES`, each module's in the order it defines them. Rules read only the parts of
:class:`DiagnosisInput` they need and return ``[]`` when those parts are missing, so one registry
serves a live server, a saved log, or a profile alone.
"""

from __future__ import annotations

from llm_dyno.core.diagnose import (
    rules_capture,
    rules_gpu,
    rules_inputs,
    rules_launch,
    rules_reference,
    rules_serving,
    synthetic,
)
from llm_dyno.core.diagnose.registry import Rule, RuleFn, registered

MODULES = (rules_inputs, rules_reference, rules_launch, rules_capture, rules_gpu, rules_serving, synthetic)
_PLACE = {m.__name__: i for i, m in enumerate(MODULES)}
RULES: tuple[Rule, ...] = tuple(sorted(registered(), key=lambda r: _PLACE[r.check.__module__]))

__all__ = ["RULES", "Rule", "RuleFn"]
