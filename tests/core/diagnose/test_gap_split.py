"""The gap split where acceptance is the cause: the dual-3090 write-up's acceptance (75 / 47 / 27 %, read from
/metrics, shared/reference/REFERENCE_NUMBERS.md) at the founding post's TPS, against the claimed reference."""

from __future__ import annotations

import dataclasses

import pytest

from llm_dyno.core.diagnose import Measured, diagnose
from llm_dyno.core.diagnose.causes import Verdict
from tests.core.diagnose.test_founding_scenario import founding_input


def test_low_acceptance_is_named_as_a_cause() -> None:
    inp = founding_input(Measured(43.0, 54.0, (0.75, 0.47, 0.27), None, "typed"))
    d = diagnose(inp)
    split = d.split
    assert split is not None and split.acceptance_is_cause and split.held_by == "both"
    narr = split.prompts[0]
    assert narr.yours.tokens_per_pass == pytest.approx(
        2.49
    ) and narr.reference.tokens_per_pass == pytest.approx(3.37)
    # 43/66 = (2.49/3.37) × pass-rate ratio: the factors multiply back to the TPS ratio
    assert narr.acceptance_ratio * narr.pass_rate_ratio == pytest.approx(narr.tps_ratio)
    acceptance = next(c for c in d.causes if c.id == "acceptance")
    assert acceptance.verdict is Verdict.LIKELY and "2.49 tokens per pass" in acceptance.reason


def test_no_split_without_acceptance_on_either_side() -> None:
    inp = dataclasses.replace(founding_input(Measured(43.0, 54.0)), log=founding_input().log.__class__())
    assert diagnose(inp).split is None
