"""The stored JSON of a result is a contract: a recorded result read back, stored in the history and
read out of it again gives the same bytes as the code that wrote the fixture (frozen result types)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from llm_dyno.core.bench.load import LoadResult
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.store import HistoryStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "bench"


@pytest.mark.parametrize("name", ["cpu-tiny-ngram", "cpu-tiny-ngram-peer"])
def test_a_stored_record_reads_and_writes_back_byte_for_byte(name: str, tmp_path: Path) -> None:
    stored = (FIXTURES / f"{name}.stored.json").read_text()
    result = BenchResult.from_dict(json.loads(stored))
    assert result.to_json() + "\n" == stored
    with HistoryStore(tmp_path / "history.db") as history:
        rid = history.add(result)
        again = history.get(rid).result
    assert again == result
    assert again.to_json() + "\n" == stored

    # the older recording (fewer keys) reads into the same record, whose JSON is today's format
    old = BenchResult.from_dict(json.loads((FIXTURES / "cpu-tiny-ngram.json").read_text()))
    assert old.to_json() + "\n" == (FIXTURES / "cpu-tiny-ngram.stored.json").read_text()


def test_a_stored_load_run_reads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    from tests.core.bench.test_load import _result

    stored = (FIXTURES / "load-levels.stored.json").read_text()
    assert _result().to_json() + "\n" == stored
    with HistoryStore(tmp_path / "history.db") as history:
        rid = history.add_load(LoadResult.model_validate(json.loads(stored)))
        _entry, again = history.get_load(rid)
    assert again.to_json() + "\n" == stored


def test_results_are_frozen() -> None:
    result = BenchResult.from_dict(json.loads((FIXTURES / "cpu-tiny-ngram.stored.json").read_text()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.error = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.prompts[0].name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.context.model = "other"  # type: ignore[misc]
    assert isinstance(result.prompts, tuple) and isinstance(result.prompts[0].runs, tuple)
