"""Stored results for the export tests: the recorded vllm-cpu benchmark results of tests/fixtures/bench
(see its README) put into a history, and a two-trial tune record made of them; plus a reader per
export file suffix that parses a written file back (JSON, CSV, Markdown)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.tune.knobs import parse_vary
from llm_dyno.core.tune.record import TrialRun, TuneRecord
from llm_dyno.core.tune.trials import build_trials

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench"
TUNE_ID = "20261201-000000-exports"


def recorded(name: str) -> BenchResult:
    """A recorded benchmark result (``cpu-tiny``, ``cpu-tiny-ngram``)."""
    return BenchResult.from_dict(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


def tune_record() -> TuneRecord:
    """A finished tune of two power caps, one recorded result each (trial 1: cpu-tiny, 2: cpu-tiny-ngram)."""
    varies = (parse_vary("power=230,290"),)
    trials = build_trials(varies)
    runs = tuple(
        TrialRun(trial=t.index, repeat=1, result=recorded(name), result_id=i + 1, temp_before_c=40.0)
        for i, (t, name) in enumerate(zip(trials, ("cpu-tiny", "cpu-tiny-ngram"), strict=True))
    )
    return TuneRecord(
        tune_id=TUNE_ID, profile="cpu-tiny", suite="cpu-fixture", varies=varies, trials=trials, repeats=1,
        gpus=(0,), started_at="2026-12-01T00:00:00", finished_at="2026-12-01T00:10:00", runs=runs,
    )  # fmt: skip


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table in ``text``, each as rows of header -> cell; raises ValueError when a row's
    cell count is not its header's or the separator row is missing."""
    tables: list[list[dict[str, str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("|"):
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].startswith("|"):
            block.append(lines[i])
            i += 1
        cells = [_cells(line) for line in block]
        if len(cells) < 2 or not all(set(c) <= set("-: ") for c in cells[1]):
            raise ValueError(f"a table without its separator row: {block[:2]}")
        header = cells[0]
        rows = []
        for row in cells[2:]:
            if len(row) != len(header):
                raise ValueError(f"{len(row)} cells under {len(header)} headers: {row}")
            rows.append(dict(zip(header, row, strict=True)))
        tables.append(rows)
    return tables


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    parts, cell, escaped = [], "", False
    for ch in inner:
        if ch == "|" and not escaped:
            parts.append(cell.strip())
            cell = ""
        else:
            cell += ch
        escaped = ch == "\\" and not escaped
    parts.append(cell.strip())
    return parts


def parse_back(path: Path) -> Any:
    """The file read back by its suffix's parser: JSON -> the value; CSV -> rows (dicts, every row as long
    as the header); Markdown -> its tables (an empty list for text without one). Unknown suffixes fail:
    a new format needs its reader here."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(text)))
        header = rows[0]
        if any(len(r) != len(header) for r in rows[1:]):
            raise ValueError(f"{path}: a row that is not as long as the header")
        return [dict(zip(header, r, strict=True)) for r in rows[1:]]
    if path.suffix == ".md":
        if not text.strip():
            raise ValueError(f"{path}: empty")
        return markdown_tables(text)
    raise AssertionError(f"no reader for {path.suffix} files: add one to tests/support/result_files.py")
