"""Side-by-side comparison of stored results: a colour-coded verdict per prompt and metric, and the
profile diff rows (what changed between the runs) beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.compare import ResultComparison, compare_many
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.ui import theme
from llm_dyno.ui.bench.format import METRIC_LABELS, delta_text, num, verdict_tone, verdict_word
from llm_dyno.ui.messages import window_message
from llm_dyno.ui.widgets.empty_views import note_when_empty

VERDICT_COLUMNS = ("Result", "Prompt", "Metric", "Baseline", "Candidate", "Δ", "Verdict")
DIFF_COLUMNS = ("Result", "Group", "Setting", "Baseline", "Candidate")


def _table(columns: tuple[str, ...]) -> QTableWidget:
    t = QTableWidget(0, len(columns))
    t.setHorizontalHeaderLabels(list(columns))
    t.verticalHeader().hide()
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    t.horizontalHeader().setStretchLastSection(True)
    return t


class ComparePanel(QWidget):
    """Verdicts of each candidate against the baseline (Welch's t-test, see ``core/bench/stats``)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        self.summary = QLabel("Select two or more results in History and press Compare.")
        self.summary.setObjectName("sectionSubtitle")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.verdicts = _table(VERDICT_COLUMNS)
        self.diff = _table(DIFF_COLUMNS)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        t = QLabel("Per metric")
        t.setObjectName("sectionTitle")
        ll.addWidget(t)
        note_when_empty(self.verdicts, "Each figure of the compared results, with its verdict, shows here.")
        note_when_empty(self.diff, "The settings that differ between the compared results show here.")
        ll.addWidget(self.verdicts, 1)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        t2 = QLabel("What changed in the profile")
        t2.setObjectName("sectionTitle")
        rl.addWidget(t2)
        rl.addWidget(self.diff, 1)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)

    def compare_stored(self, history_path: Path | None, ids: list[int]) -> str | None:
        """Compare stored results with the oldest (the baseline); returns what went wrong, in the
        window's words, or None when the tables show the comparison."""
        ids = sorted(ids)  # ids grow with time; the history lists newest first, but "before" is the baseline
        if len(ids) < 2:
            return "select at least two results to compare"
        try:
            with HistoryStore(history_path) as store:
                items: list[tuple[int | None, BenchResult]] = [(i, store.get(i).result) for i in ids]
        except DynoError as exc:
            return window_message(exc)
        self.set_comparisons(compare_many(items))
        return None

    def set_comparisons(self, comparisons: list[ResultComparison]) -> None:
        """Fill both tables (the baseline is each comparison's ``baseline_id``)."""
        c = theme.colors()
        bg = {"green": c.added, "red": c.removed, "grey": c.alt}
        self.verdicts.setRowCount(0)
        self.diff.setRowCount(0)
        notes: list[str] = []
        for comp in comparisons:
            who = f"#{comp.candidate_id} vs #{comp.baseline_id}"
            for prompt, cmp_ in comp.rows:
                row = self.verdicts.rowCount()
                self.verdicts.insertRow(row)
                digits = 3 if cmp_.metric == "ttft_s" else 1
                cells = [
                    who,
                    prompt,
                    METRIC_LABELS.get(cmp_.metric, cmp_.metric),
                    num(cmp_.baseline_mean, digits),
                    num(cmp_.candidate_mean, digits),
                    delta_text(cmp_.delta_pct),
                    verdict_word(cmp_),
                ]
                tone = verdict_tone(cmp_.verdict)
                for col, text in enumerate(cells):
                    item = QTableWidgetItem(text)
                    item.setToolTip(cmp_.rule)
                    if col in (3, 4, 5):
                        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    if col == len(cells) - 1:
                        item.setForeground(QColor(getattr(c, tone)))
                        item.setBackground(QColor(bg[tone]))
                        item.setData(Qt.ItemDataRole.UserRole, tone)
                    self.verdicts.setItem(row, col, item)
            for d in comp.profile_diff or []:
                self._diff_row(who, d)
            notes += [f"{who}: {n}" for n in comp.notes]
            if comp.profile_diff is None:
                notes.append(f"{who}: no profile snapshot on both sides, so no profile diff")
            elif not comp.profile_diff:
                notes.append(f"{who}: same profile")
        base = comparisons[0].baseline_id if comparisons else None
        text = f"Baseline #{base}; verdicts by Welch's t-test at 95 % (hover a row for the numbers)."
        self.summary.setText(" ".join([text, *notes]) if comparisons else "Nothing to compare.")

    def _diff_row(self, who: str, d: dict[str, Any]) -> None:
        row = self.diff.rowCount()
        self.diff.insertRow(row)
        if "error" in d:
            cells = [who, "", str(d["error"]), "", ""]
        else:
            cells = [
                who,
                str(d.get("group", "")),
                str(d.get("key", "")),
                str(d.get("left") or "(none)"),
                str(d.get("right") or "(none)"),
            ]
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            self.diff.setItem(row, col, item)
