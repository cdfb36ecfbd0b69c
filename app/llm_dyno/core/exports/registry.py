"""The formats a result is exported in: one registry for the CLI and the window.

A result is one of three kinds (:class:`ResultKind`): a benchmark (:class:`BenchResult`), a tune
(:class:`TuneResult`: the record and its analysis) or what the dashboard shows (:class:`SeriesWindow`).
Each :class:`ResultExport` has a title, the suffix of its files and a writer per kind it takes
(subject -> text). The CLI's ``--json FILE`` / ``--csv FILE`` … flags of ``bench`` and ``tune`` and the
``--format`` choices of ``llm-dyno export``, and the window's export menus and buttons, are this
registry's entries for the kind at hand, in order. Everything is written through
:func:`llm_dyno.core.export_file.write_export` (whole or not at all, valid UTF-8).

To add a format, add an entry (and its writers) to :data:`RESULT_EXPORTS`; docs/guide.md "Extending"
shows one. Chart images (PNG) are the window's own: they are drawn by Qt, not written from the result.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from llm_dyno.core.bench.report import burst_note, markdown_line, prompt_lines, to_csv
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.workloads.export import steps_csv
from llm_dyno.core.errors import DynoError
from llm_dyno.core.export_file import write_export
from llm_dyno.core.exports.series import SeriesWindow, utc_stamp
from llm_dyno.core.textsafe import csv_cell
from llm_dyno.core.tune import export as tune_export
from llm_dyno.core.tune.analysis import TuneAnalysis
from llm_dyno.core.tune.record import TuneRecord


class ResultKind(StrEnum):
    """What is exported: a benchmark result, a tune, or the dashboard's visible series."""

    BENCH = "bench"
    TUNE = "tune"
    DASHBOARD = "dashboard"


@dataclass(frozen=True)
class TuneResult:
    """A tune as exported: its record and what the analysis found in it."""

    record: TuneRecord
    analysis: TuneAnalysis


Subject = BenchResult | TuneResult | SeriesWindow
_SUBJECTS: dict[type, ResultKind] = {
    BenchResult: ResultKind.BENCH,
    TuneResult: ResultKind.TUNE,
    SeriesWindow: ResultKind.DASHBOARD,
}


@dataclass(frozen=True)
class ResultExport:
    """One export format: its title in the user's words, its file suffix, and a writer for each result
    kind it takes (each writer's argument is that kind's subject: see :data:`_SUBJECTS`)."""

    title: str
    suffix: str
    writers: Mapping[ResultKind, Callable[[Any], str]]

    @property
    def kinds(self) -> frozenset[ResultKind]:
        """The result kinds this format takes."""
        return frozenset(self.writers)

    def file_filter(self) -> str:
        """The save dialog's filter, e.g. ``CSV (*.csv)``."""
        return f"{self.title} (*{self.suffix})"


# ---- benchmark ------------------------------------------------------------------------------------
def _bench_json(result: BenchResult) -> str:
    return result.to_json() + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _bench_markdown(result: BenchResult) -> str:
    """A heading, the headline line, a table with a row per prompt, then each prompt's figures."""
    ctx = result.context
    title = " · ".join(x for x in (result.suite, ctx.profile_name, ctx.started) if x)
    lines = [f"# Benchmark {_md_cell(title)}", "", _md_cell(markdown_line(result)) or "no figures", ""]
    lines += [
        "| prompt | measured runs | counted runs | wall TPS | decode TPS | TTFT s |",
        "|---|---|---|---|---|---|",
    ]
    for p in result.prompts:
        cells = []
        for metric in ("wall_tps", "decode_tps", "ttft_s"):
            s = p.summary(metric)
            cells.append("—" if s is None else f"{s.mean:.4g}")
        lines.append(f"| {_md_cell(p.name)} | {len(p.measured)} | {len(p.counted)} | {' | '.join(cells)} |")
    lines.append("")
    lines += [f"- {_md_cell(line)}" for line in prompt_lines(result)]
    if (note := burst_note(result)) is not None:
        lines += ["", note]
    return "\n".join(lines) + "\n"


# ---- tune -----------------------------------------------------------------------------------------
def _tune_json(t: TuneResult) -> str:
    return json.dumps(tune_export.to_dict(t.record, t.analysis), indent=1, default=str) + "\n"


def _tune_csv(t: TuneResult) -> str:
    return tune_export.to_csv(t.record, t.analysis)


def _tune_markdown(t: TuneResult) -> str:
    lines = [*tune_export.markdown_table(t.analysis), "", tune_export.post_row(t.record, t.analysis)]
    return "\n".join(lines) + "\n"


def _tune_post(t: TuneResult) -> str:
    return tune_export.post_row(t.record, t.analysis) + "\n"


# ---- dashboard ------------------------------------------------------------------------------------
def _series_csv(w: SeriesWindow) -> str:
    """A row per timestamp: the ISO time, the Unix time, each series' value (empty where it has none)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = w.names()
    writer.writerow(["time_utc", "unix_s", *(csv_cell(n) for n in names)])
    for ts, row in w.rows():
        cells = ["" if (x := row.get(n)) is None else f"{x:.6g}" for n in names]
        writer.writerow([utc_stamp(ts), f"{ts:.3f}", *cells])
    return out.getvalue()


def _series_json(w: SeriesWindow) -> str:
    rows = [{"time_utc": utc_stamp(ts), "unix_s": ts, **row} for ts, row in w.rows()]
    return json.dumps({"t0": w.t0, "t1": w.t1, "series": w.names(), "rows": rows}, indent=1) + "\n"


RESULT_EXPORTS: dict[str, ResultExport] = {
    "json": ResultExport(
        "JSON",
        ".json",
        {ResultKind.BENCH: _bench_json, ResultKind.TUNE: _tune_json, ResultKind.DASHBOARD: _series_json},
    ),
    "csv": ResultExport(
        "CSV",
        ".csv",
        {ResultKind.BENCH: to_csv, ResultKind.TUNE: _tune_csv, ResultKind.DASHBOARD: _series_csv},
    ),
    "markdown": ResultExport(
        "Markdown", ".md", {ResultKind.BENCH: _bench_markdown, ResultKind.TUNE: _tune_markdown}
    ),
    "post": ResultExport("Post row (Markdown)", ".md", {ResultKind.TUNE: _tune_post}),
    # a workload suite's steps (turns, cold/warm requests, context lengths): core/bench/workloads
    "steps-csv": ResultExport("Workload steps (CSV)", ".csv", {ResultKind.BENCH: steps_csv}),
}


def formats_for(kind: ResultKind) -> dict[str, ResultExport]:
    """The formats that take ``kind``, in registry order (what the CLI and the window offer)."""
    return {name: fmt for name, fmt in RESULT_EXPORTS.items() if kind in fmt.writers}


def kind_of(subject: Subject) -> ResultKind:
    """The kind of result ``subject`` is."""
    return _SUBJECTS[type(subject)]


def export_text(name: str, subject: Subject) -> str:
    """``subject`` written in the format called ``name``, ending in a newline. Raises
    :class:`DynoError` naming the formats there are when ``name`` does not take this kind."""
    kind = kind_of(subject)
    fmt = RESULT_EXPORTS.get(name)
    if fmt is None or kind not in fmt.writers:
        known = ", ".join(formats_for(kind)) or "none"
        raise DynoError(
            f"no {kind.value} export format {name!r}", hint=f"formats for a {kind.value}: {known}"
        )
    out = fmt.writers[kind](subject)
    return out if out.endswith("\n") else out + "\n"


def write_result(path: Path, name: str, subject: Subject, what: str | None = None) -> None:
    """Write ``subject`` in the format ``name`` to ``path`` (whole or not at all; see
    :func:`write_export`); ``what`` names the export in an error (default: its title)."""
    text = export_text(name, subject)
    write_export(path, text, what or f"the {RESULT_EXPORTS[name].title} export")
