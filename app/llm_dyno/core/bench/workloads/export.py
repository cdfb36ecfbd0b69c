"""A workload's steps as CSV: one row per turn, request or context length (the export registry's
``steps-csv`` format; the per-step figures a plot or a spreadsheet of the workload needs)."""

from __future__ import annotations

import csv
import io

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.workloads.records import WorkloadStep, workload_of
from llm_dyno.core.textsafe import csv_cell

COLUMNS = (*WorkloadStep.model_fields, "hit_rate")


def steps_csv(result: BenchResult) -> str:
    """The result's workload steps, a row each (``kind`` first); a standard suite's result has no steps
    (the header alone)."""
    report = workload_of(result.context.extra)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["kind", *COLUMNS])
    for step in report.steps if report is not None else ():
        row = step.model_dump()
        cells = [
            "" if (v := row.get(c, step.hit_rate if c == "hit_rate" else None)) is None else v
            for c in COLUMNS
        ]
        writer.writerow(
            [report.kind if report else "", *(csv_cell(c) if isinstance(c, str) else c for c in cells)]
        )
    return out.getvalue()
