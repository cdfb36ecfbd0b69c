"""Stored results: filter by profile, suite and tag; tag, annotate, delete, export, open and compare."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMenu,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.errors import DynoError
from llm_dyno.core.exports.registry import RESULT_EXPORTS, ResultKind, formats_for, write_result
from llm_dyno.core.history.store import HistoryEntry, HistoryStore
from llm_dyno.ui.bench.charts import SpreadChart
from llm_dyno.ui.bench.format import num
from llm_dyno.ui.icons import icon
from llm_dyno.ui.messages import window_message
from llm_dyno.ui.widgets.empty_views import note_when_empty

COLUMNS = ("#", "Started", "Profile", "Suite", "Narr TPS", "Code TPS", "Tags", "Note")
ALL = "All"


class HistoryPanel(QWidget):
    """The history list. Every write goes to the store at once; errors arrive as ``error``."""

    openRequested = Signal(int)
    compareRequested = Signal(list)  # ids, the first is the baseline
    error = Signal(str)
    info = Signal(str)

    def __init__(self, path: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self.entries: list[HistoryEntry] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        filters = QHBoxLayout()
        self.profile_filter = QComboBox()
        self.suite_filter = QComboBox()
        self.tag_filter = QComboBox()
        for label, combo in (
            ("Profile", self.profile_filter),
            ("Suite", self.suite_filter),
            ("Tag", self.tag_filter),
        ):
            filters.addWidget(QLabel(label))
            combo.setMinimumWidth(120)
            combo.currentIndexChanged.connect(lambda _i: self.reload(keep_filters=True))
            filters.addWidget(combo)
        filters.addStretch(1)
        self.count_label = QLabel()
        self.count_label.setObjectName("sectionSubtitle")
        filters.addWidget(self.count_label)
        layout.addLayout(filters)

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        note_when_empty(
            self.table,
            "No stored result here: every benchmark, sweep and A/B run from this window is kept and "
            "listed here (the filters above narrow the list).",
        )
        self.table.doubleClicked.connect(lambda _i: self._open())
        layout.addWidget(self.table, 1)

        buttons = QHBoxLayout()
        self.open_button = QPushButton("Open")
        self.compare_button = QPushButton(icon("diff"), "Compare")
        self.compare_button.setToolTip("Select two or more results; the first selected is the baseline")
        self.tag_button = QPushButton("Tag…")
        self.note_button = QPushButton("Note…")
        self.delete_button = QPushButton(icon("delete"), "Delete")
        self.delete_button.setObjectName("dangerButton")
        self.export_button = QPushButton(icon("export"), "Export")
        menu = QMenu(self.export_button)
        # the formats are the result-export registry's for a benchmark; the chart image is the window's own
        self.export_actions = {
            name: menu.addAction(f"{fmt.title}…", partial(self.export_selected, name))
            for name, fmt in formats_for(ResultKind.BENCH).items()
        }
        self.export_actions["png"] = menu.addAction("Chart as PNG…", lambda: self.export_selected("png"))
        self.export_button.setMenu(menu)
        self.open_button.clicked.connect(self._open)
        self.compare_button.clicked.connect(lambda: self.compareRequested.emit(self.selected_ids()))
        self.tag_button.clicked.connect(lambda: self.tag_selected())
        self.note_button.clicked.connect(lambda: self.note_selected())
        self.delete_button.clicked.connect(lambda: self.delete_selected())
        for b in (
            self.open_button,
            self.compare_button,
            self.tag_button,
            self.note_button,
            self.export_button,
        ):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.delete_button)
        layout.addLayout(buttons)
        self._update_buttons()

    # ---- reading -------------------------------------------------------------------------------
    def _store(self) -> HistoryStore:
        return HistoryStore(self.path)

    @staticmethod
    def _filter_value(combo: QComboBox) -> str | None:
        value = combo.currentData()
        return value if isinstance(value, str) else None

    def _fill(self, combo: QComboBox, values: list[str]) -> None:
        keep = self._filter_value(combo)
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(ALL, None)
        for v in values:
            combo.addItem(v, v)
        index = combo.findData(keep) if keep is not None else 0
        combo.setCurrentIndex(max(index, 0))
        combo.blockSignals(False)

    def set_filters(
        self, *, profile: str | None = None, suite: str | None = None, tag: str | None = None
    ) -> None:
        """Choose filter values (None: all) and reload."""
        for combo, value in (
            (self.profile_filter, profile),
            (self.suite_filter, suite),
            (self.tag_filter, tag),
        ):
            combo.blockSignals(True)
            combo.setCurrentIndex(max(combo.findData(value), 0) if value is not None else 0)
            combo.blockSignals(False)
        self.reload(keep_filters=True)

    def reload(self, keep_filters: bool = False) -> None:
        """Re-read the store (filter choices too unless ``keep_filters``)."""
        try:
            with self._store() as store:
                if not keep_filters:
                    everything = store.list()
                    self._fill(self.profile_filter, sorted({e.profile for e in everything if e.profile}))
                    self._fill(self.suite_filter, sorted({e.suite for e in everything}))
                    self._fill(self.tag_filter, sorted({t for e in everything for t in e.tags}))
                self.entries = store.list(
                    profile=self._filter_value(self.profile_filter),
                    suite=self._filter_value(self.suite_filter),
                    tag=self._filter_value(self.tag_filter),
                )
        except DynoError as exc:
            self.error.emit(window_message(exc))
            return
        self.table.setRowCount(0)
        for e in self.entries:
            row = self.table.rowCount()
            self.table.insertRow(row)
            cells = [
                str(e.id),
                e.started.replace("T", " ")[:19],
                e.profile or "—",
                e.suite,
                num(e.narr_wall_tps),
                num(e.code_wall_tps),
                ", ".join(e.tags),
                e.note,
            ]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, e.id)
                if col in (0, 4, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)
        self.count_label.setText(f"{len(self.entries)} result{'s' if len(self.entries) != 1 else ''}")
        self._update_buttons()

    def selected_ids(self) -> list[int]:
        """Ids of the selected rows, in the order they were selected (the first is the baseline)."""
        rows: list[int] = []
        for index in self.table.selectionModel().selectedRows():
            if index.row() not in rows:
                rows.append(index.row())
        return [self.entries[r].id for r in rows if r < len(self.entries)]

    def select_ids(self, ids: list[int]) -> None:
        """Select rows by result id."""
        self.table.clearSelection()
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row, e in enumerate(self.entries):
            if e.id in ids:
                self.table.selectRow(row)
        self.table.setSelectionMode(mode)

    def _update_buttons(self) -> None:
        n = len(self.table.selectionModel().selectedRows())
        for b in (self.tag_button, self.note_button, self.delete_button, self.export_button):
            b.setEnabled(n >= 1)
        self.open_button.setEnabled(n == 1)
        self.compare_button.setEnabled(n >= 2)

    def _open(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:
            self.openRequested.emit(ids[0])

    # ---- writing -------------------------------------------------------------------------------
    def _each(self, op: Callable[[HistoryStore, int], None]) -> None:
        ids = self.selected_ids()
        try:
            with self._store() as store:
                for rid in ids:
                    op(store, rid)
        except DynoError as exc:
            self.error.emit(window_message(exc))
        self.reload()
        self.select_ids(ids)  # keep the selection across the reload (deleted rows are gone)

    def tag_selected(self, tag: str | None = None) -> None:
        """Tag the selected results (asks for the tag when not given)."""
        if tag is None:
            tag, ok = QInputDialog.getText(self, "Tag results", "Tag:")
            if not ok:
                return
        if tag.strip():
            self._each(lambda store, rid: store.tag(rid, tag.strip()))

    def note_selected(self, text: str | None = None) -> None:
        """Set the note of the selected results (asks when not given)."""
        if text is None:
            current = self.entries[self.table.currentRow()].note if self.table.currentRow() >= 0 else ""
            text, ok = QInputDialog.getText(self, "Note", "Note:", text=current)
            if not ok:
                return
        self._each(lambda store, rid: store.note(rid, text))

    def delete_selected(self) -> None:
        """Delete the selected results."""
        self._each(lambda store, rid: store.delete(rid))

    def export_selected(self, kind: str, path: Path | None = None) -> Path | None:
        """Write the first selected result in a registered format (``json``, ``csv``, ``markdown`` …: see
        :mod:`llm_dyno.core.exports.registry`) or as a ``png`` chart; returns the file."""
        ids = self.selected_ids()
        if not ids:
            return None
        if path is None:
            suffix, filters = (
                (".png", "PNG (*.png)")
                if kind == "png"
                else (RESULT_EXPORTS[kind].suffix, RESULT_EXPORTS[kind].file_filter())
            )
            name, _ = QFileDialog.getSaveFileName(self, "Export result", f"result-{ids[0]}{suffix}", filters)
            if not name:
                return None
            path = Path(name)
        try:
            with self._store() as store:
                result = store.get(ids[0]).result
            if kind != "png":
                write_result(path, kind, result)
            else:
                # render off screen inside a plain container: grabbing a top-level plot segfaults
                box = QWidget()
                box.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
                chart = SpreadChart()
                QVBoxLayout(box).addWidget(chart)
                box.resize(900, 500)
                box.show()
                chart.set_runs(result.all_runs())
                QApplication.processEvents()
                ok = box.grab().save(str(path))
                box.close()
                box.deleteLater()
                if not ok:
                    raise OSError(f"cannot write {path}")
        except (DynoError, OSError) as exc:
            self.error.emit(f"export failed: {exc}")
            return None
        self.info.emit(f"Exported #{ids[0]} to {path}")
        return path
