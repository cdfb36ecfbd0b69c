"""A stored ceiling read back from a result file written elsewhere (another version, a hand edit, a
hostile file): values of the wrong type read as unknown, a prompt without its tokens per pass is left
out, a ceiling whose inputs are missing or not positive reads as none, and the result still reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.store import HistoryStore

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "bench-every-part.stored.json"


def _stored_with(roofline: object, tmp_path: Path) -> BenchResult:
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    data["context"]["roofline"] = roofline
    with HistoryStore(tmp_path / "history.db") as history:
        rid = history.add(BenchResult.from_dict(data))
        return history.get(rid).result


def test_wrong_types_read_as_unknown_and_a_prompt_without_tokens_per_pass_is_left_out(tmp_path: Path) -> None:
    roofline = {
        "weights_bytes": 2e9, "bandwidth_bytes_s": 4.8e12, "draft_bytes_per_pass": -5, "newer_key": 1,
        "prompts": {
            "narrative": {"mean_acceptance_length": 1.5, "ceiling_tps": "fast", "problem": 7, "shiny": True},
            "code": {"ceiling_tps": 100.0},
            "other": "not an object",
        },
    }  # fmt: skip
    ceiling = _stored_with(roofline, tmp_path).context.roofline
    assert ceiling is not None
    assert ceiling.bandwidth_source == "stored" and ceiling.draft_bytes_per_pass == 0.0
    assert list(ceiling.prompts) == ["narrative"]
    narrative = ceiling.prompts["narrative"]
    assert narrative.mean_acceptance_length == 1.5
    assert narrative.ceiling_tps is None and narrative.problem is None


@pytest.mark.parametrize(
    "roofline",
    [
        {"weights_bytes": -1.0, "bandwidth_bytes_s": 4.8e12},
        {"weights_bytes": 2e9, "bandwidth_bytes_s": 0},
        {"weights_bytes": "2e9", "bandwidth_bytes_s": 4.8e12},
        {"bandwidth_bytes_s": 4.8e12},
        ["not", "an", "object"],
    ],
)
def test_a_ceiling_whose_inputs_do_not_read_is_none(roofline: object, tmp_path: Path) -> None:
    result = _stored_with(roofline, tmp_path)
    assert result.context.roofline is None
    assert "roofline" not in result.to_dict()["context"]
