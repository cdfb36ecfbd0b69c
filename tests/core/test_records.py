"""A record's JSON derived from its fields: nested records by their own ``to_dict``, tuples as lists,
enums as values, in field order; the stored layouts it writes are held byte for byte by the golden
tests (tests/core/history/test_record_format.py, tests/core/tune/test_record_format.py)."""

from __future__ import annotations

import json

import pytest

from llm_dyno.core.bench.load import RequestRecord
from llm_dyno.core.bench.peer import PeerTimings
from llm_dyno.core.bench.stats import Comparison, Verdict
from llm_dyno.core.records import fields_dict


def test_nested_records_tuples_and_enums_in_field_order() -> None:
    peer = PeerTimings(ttft_s=0.25, e2e_s=1.5, tpot_s=0.05, itl_s=(0.5, 0.75))
    request = RequestRecord(prompt="narrative", sent_at_s=0.1, output_tokens=26, prompt_tokens=12, peer=peer)
    assert json.dumps(request.model_dump(mode="json")) == (
        '{"prompt": "narrative", "sent_at_s": 0.1, "output_tokens": 26, "prompt_tokens": 12, '
        '"peer": {"ttft_s": 0.25, "e2e_s": 1.5, "tpot_s": 0.05, "itl_s": [0.5, 0.75]}, "error": null}'
    )
    comparison = Comparison(
        metric="wall_tps",
        baseline_mean=50.0,
        candidate_mean=55.0,
        delta_pct=10.0,
        verdict=Verdict.BETTER,
        rule="welch",
    )
    verdict = comparison.model_dump(mode="json")["verdict"]
    assert verdict == "better" and type(verdict) is str  # the value, not the enum member


def test_only_a_record_instance_is_taken() -> None:
    with pytest.raises(TypeError, match="not a dataclass instance"):
        fields_dict(PeerTimings)
    with pytest.raises(TypeError, match="not a dataclass instance"):
        fields_dict({"ttft_s": 1.0})
