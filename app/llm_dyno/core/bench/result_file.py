"""Read back a benchmark result that ``bench --json`` wrote (for ``diagnose --bench``)."""

from __future__ import annotations

from pathlib import Path

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import loads_outside


def read_result_file(path: Path) -> BenchResult:
    """A result written by ``bench --json``; :class:`DynoError` naming the file and what is wrong."""
    try:
        data = loads_outside(path.read_text(encoding="utf-8"), "the file")
    except OSError as exc:
        raise DynoError(f"cannot read the benchmark result {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise DynoError(f"{path}: not a benchmark result: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("prompts"), list):
        raise DynoError(f'{path}: not a benchmark result (no "prompts" list)', hint="use bench --json FILE")
    try:
        return BenchResult.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DynoError(f"{path}: a benchmark result with a bad field: {exc!r}") from exc
