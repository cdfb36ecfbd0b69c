"""Where diagnosis rules register: ``@rule(id, looks_at)`` on the function, the id written once.

A rule function returns findings made with :data:`THIS_RULE` as their id; the registered function
gives them the rule's id. A second rule with an id already taken, or an id that is not lower-case words
joined by dashes, is refused when its module is imported; a finding with any other id than
:data:`THIS_RULE` or the rule's own is refused when the rule runs (the engine reports it as the rule's
error). :mod:`llm_dyno.core.diagnose.rules` imports the rule modules and holds the registry's order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import Finding

RuleFn = Callable[[DiagnosisInput], list[Finding]]
THIS_RULE = "<this rule>"  # the id a rule function gives its findings; the registry fills in the rule's
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Rule:
    """A registered rule: the finding id it produces, what it looks at, and the function."""

    id: str
    looks_at: str
    check: RuleFn


_REGISTERED: dict[str, Rule] = {}


def rule(rule_id: str, looks_at: str) -> Callable[[RuleFn], RuleFn]:
    """Register the decorated function as the rule ``rule_id``, which reads ``looks_at`` (in the user's
    words, e.g. "profile, launch log"); returns the function with its findings' ids filled in."""
    if not _ID.match(rule_id):
        raise ValueError(f"rule id {rule_id!r}: lower-case words joined by dashes, e.g. power-cap-binding")
    if rule_id in _REGISTERED:
        raise ValueError(f"rule id {rule_id!r} is registered twice")

    def register(fn: RuleFn) -> RuleFn:
        @functools.wraps(fn)
        def check(inp: DiagnosisInput) -> list[Finding]:
            out = []
            for f in fn(inp):
                if f.id not in (THIS_RULE, rule_id):
                    raise ValueError(f"rule {rule_id!r} made a finding with the unknown id {f.id!r}")
                out.append(replace(f, id=rule_id))
            return out

        _REGISTERED[rule_id] = Rule(rule_id, looks_at, check)
        return check

    return register


def registered() -> tuple[Rule, ...]:
    """Every registered rule, in the order their modules registered them."""
    return tuple(_REGISTERED.values())
