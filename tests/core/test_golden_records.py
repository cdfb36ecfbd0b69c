"""The stored and sent forms of the records hold to golden files written by the code of commit "golden
files" (tests/fixtures/golden, see its README): building them again gives the same bytes, and a stored
file read back and written again (directly, through the history and through ``history show --json``)
gives the same bytes, so that a change of the record types cannot change a byte of what users have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.telemetry.nvml import reading_from_dict
from tests.support.cli import cli
from tests.support.golden_records import BUILDERS, GOLDEN, every_part_result


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_records_are_written_as_the_golden_file(name: str) -> None:
    assert BUILDERS[name]() == (GOLDEN / name).read_text(encoding="utf-8")


def test_a_stored_result_with_every_part_reads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    stored = (GOLDEN / "bench-every-part.stored.json").read_text(encoding="utf-8")
    result = BenchResult.from_dict(json.loads(stored))
    assert result == every_part_result()
    assert result.to_json() + "\n" == stored
    summaries = {p.name: p.to_dict()["summary"] for p in result.prompts}
    assert summaries["narrative"]["impossible_runs"][0]["index"] == 2
    assert "impossible_runs" not in summaries["code"]  # written only when there are any

    home = tmp_path / "home"
    with HistoryStore(home / "data" / "history.db") as history:
        rid = history.add(result)
        assert history.get(rid).result.to_json() + "\n" == stored
    shown = cli(home, "history", "show", str(rid), "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert [data.pop(k) for k in ("id", "tags", "note")] == [rid, [], ""]
    assert json.dumps(data, indent=2) + "\n" == stored


def test_stored_gpu_readings_read_and_write_back_byte_for_byte() -> None:
    stored = (GOLDEN / "gpu-readings.json").read_text(encoding="utf-8")
    items = json.loads(stored)
    assert "power_instant_w" in items[0] and "power_instant_w" not in items[1]
    again = [reading_from_dict(item).to_dict() for item in items]
    assert json.dumps(again, indent=2) + "\n" == stored


def _history_list_json(home: Path) -> str:
    with HistoryStore(home / "data" / "history.db") as history:
        rid = history.add(every_part_result())
        history.tag(rid, "golden")
        history.note(rid, "every part")
    listed = cli(home, "history", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


def test_history_list_json_is_written_as_the_golden_file(tmp_path: Path) -> None:
    assert _history_list_json(tmp_path / "home") == (GOLDEN / "history-list.json").read_text(encoding="utf-8")


if __name__ == "__main__":  # writes history-list.json (see tests/fixtures/golden/README.md)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        (GOLDEN / "history-list.json").write_text(_history_list_json(Path(folder)), encoding="utf-8")
