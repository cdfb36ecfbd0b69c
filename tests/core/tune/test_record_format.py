"""A tune's stored JSON is a contract: the record read back from a stored file and saved again gives the
same bytes as the code that wrote the fixture (``tests/fixtures/tune/README.md``), and the record is
frozen: the tune job builds a new one at each step."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from llm_dyno.core.tune.record import load_record

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tune" / "tune-cancelled.stored.json"


def test_a_stored_tune_record_reads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    record = load_record(FIXTURE)
    assert [r.trial for r in record.runs] == [1, 2, 3] and record.cancelled
    assert record.original_power_w == ((0, 700.0),)
    record.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == FIXTURE.read_bytes()


def test_a_tune_record_is_frozen_and_grows_by_new_records() -> None:
    record = load_record(FIXTURE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.cancelled = False  # type: ignore[misc]
    assert isinstance(record.runs, tuple) and isinstance(record.restored, tuple)
    grown = record.with_run(record.runs[0]).with_restore(("GPU 0 clocks unlocked (sm)",), ())
    assert len(grown.runs) == 4 and len(record.runs) == 3  # the original is unchanged
    assert grown.restored == ("GPU 0 power limit 700 W", "GPU 0 clocks unlocked (sm)")
    done = grown.finished(error="RuntimeError: boom", at="2026-12-03T09:00:00+00:00")
    assert done.error == "RuntimeError: boom" and done.finished_at == "2026-12-03T09:00:00+00:00"
    assert grown.error is None and grown.finished_at == record.finished_at
