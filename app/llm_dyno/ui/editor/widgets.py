"""Small editing widgets for the profile form: a field with its hint, list and table editors."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.ui.icons import icon


class Field(QWidget):
    """A labelled editor with a help line and a red hint that names the problem when the value is wrong."""

    def __init__(
        self, label: str, editor: QWidget, help_text: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.editor = editor
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        self.label = QLabel(label)
        self.label.setObjectName("fieldLabel")
        self.label.setBuddy(editor)
        layout.addWidget(self.label)
        layout.addWidget(editor)
        self.help = QLabel(help_text)
        self.help.setObjectName("fieldHelp")
        self.help.setWordWrap(True)
        self.help.setVisible(bool(help_text))
        layout.addWidget(self.help)
        self.hint = QLabel()
        self.hint.setObjectName("fieldHint")
        self.hint.setWordWrap(True)
        self.hint.hide()
        layout.addWidget(self.hint)

    def set_error(self, message: str | None) -> None:
        """Show (or clear) the problem under the field and mark the editor red."""
        self.hint.setText(message or "")
        self.hint.setVisible(bool(message))
        self.help.setVisible(not message and bool(self.help.text()))
        self.editor.setProperty("invalid", bool(message))
        self.editor.style().unpolish(self.editor)
        self.editor.style().polish(self.editor)

    @property
    def error(self) -> str:
        """The hint shown now ("" when none)."""
        return self.hint.text() if self.hint.isVisible() or self.hint.text() else ""


class Section(QFrame):
    """A card with a title, a one-line description and a grid of fields."""

    def __init__(
        self, title: str, subtitle: str = "", columns: int = 2, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("formSection")
        self._columns = columns
        self._count = 0
        outer = QVBoxLayout(self)
        outer.setContentsMargins(18, 14, 18, 16)
        outer.setSpacing(4)
        head = QLabel(title)
        head.setObjectName("sectionTitle")
        outer.addWidget(head)
        if subtitle:
            sub = QLabel(subtitle)
            sub.setObjectName("sectionSubtitle")
            sub.setWordWrap(True)
            outer.addWidget(sub)
        outer.addSpacing(8)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(18)
        self.grid.setVerticalSpacing(12)
        for c in range(columns):
            self.grid.setColumnStretch(c, 1)
        outer.addLayout(self.grid)

    def add(self, field: QWidget, span: int = 1) -> None:
        """Add a field in the next free cell(s)."""
        col = self._count % self._columns
        if col + span > self._columns:
            self._count += self._columns - col
            col = 0
        row = self._count // self._columns
        self.grid.addWidget(field, row, col, 1, span, Qt.AlignmentFlag.AlignTop)
        self._count += span


class TriState(QComboBox):
    """Default / On / Off for a vLLM switch that has a ``--no-`` form."""

    changed = Signal(object)  # bool | None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.addItem("vLLM default", None)
        self.addItem("On", True)
        self.addItem("Off", False)
        self.currentIndexChanged.connect(lambda _i: self.changed.emit(self.currentData()))

    def set_state(self, state: bool | None) -> None:
        """Show a state without emitting ``changed``."""
        self.blockSignals(True)
        self.setCurrentIndex({None: 0, True: 1, False: 2}[state])
        self.blockSignals(False)


def _small_button(name: str, tip: str) -> QToolButton:
    b = QToolButton()
    b.setIcon(icon(name))
    b.setToolTip(tip)
    b.setAutoRaise(True)
    return b


class ListEditor(QWidget):
    """An editable list of strings (volumes, ports, extra flags): double-click to edit, + and − buttons."""

    changed = Signal(list)

    def __init__(self, placeholder: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._placeholder = placeholder
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget()
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.SelectedClicked
        )
        self.list.setMinimumHeight(76)
        self.list.setMaximumHeight(140)
        self.list.itemChanged.connect(lambda _i: self.changed.emit(self.values()))
        layout.addWidget(self.list, 1)
        buttons = QVBoxLayout()
        self.add_button = _small_button("add", "Add an entry")
        self.remove_button = _small_button("delete", "Remove the selected entry")
        self.add_button.clicked.connect(self._add)
        self.remove_button.clicked.connect(self._remove)
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)

    def values(self) -> list[str]:
        """The entries, blank ones left out."""
        out = []
        for i in range(self.list.count()):
            text = self.list.item(i).text().strip()
            if text and text != self._placeholder:
                out.append(text)
        return out

    def set_values(self, values: list[str]) -> None:
        """Show entries without emitting ``changed``."""
        self.list.blockSignals(True)
        self.list.clear()
        for v in values:
            self._append(v)
        self.list.blockSignals(False)

    def _append(self, text: str) -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
        self.list.addItem(item)
        return item

    def _add(self) -> None:
        self.list.blockSignals(True)
        item = self._append(self._placeholder)
        self.list.blockSignals(False)
        self.list.setCurrentItem(item)
        self.list.editItem(item)

    def _remove(self) -> None:
        row = self.list.currentRow()
        if row >= 0:
            self.list.takeItem(row)
            self.changed.emit(self.values())


class EnvTable(QWidget):
    """Environment variables as a two-column table."""

    changed = Signal(dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["Variable", "Value"])
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnWidth(0, 260)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setMinimumHeight(150)
        self.table.itemChanged.connect(lambda _i: self.changed.emit(self.values()))
        layout.addWidget(self.table, 1)
        buttons = QVBoxLayout()
        add = _small_button("add", "Add a variable")
        remove = _small_button("delete", "Remove the selected variable")
        add.clicked.connect(self._add)
        remove.clicked.connect(self._remove)
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        layout.addLayout(buttons)

    def values(self) -> dict[str, str]:
        """Rows with a name, in table order."""
        out: dict[str, str] = {}
        for r in range(self.table.rowCount()):
            key = self.table.item(r, 0)
            value = self.table.item(r, 1)
            if key is not None and key.text().strip():
                out[key.text().strip()] = value.text() if value is not None else ""
        return out

    def set_values(self, env: dict[str, str]) -> None:
        """Show variables without emitting ``changed``."""
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        for k, v in env.items():
            r = self.table.rowCount()
            self.table.insertRow(r)
            self.table.setItem(r, 0, QTableWidgetItem(k))
            self.table.setItem(r, 1, QTableWidgetItem(v))
        self.table.resizeRowsToContents()
        self.table.blockSignals(False)

    def _add(self) -> None:
        self.table.blockSignals(True)
        r = self.table.rowCount()
        self.table.insertRow(r)
        self.table.setItem(r, 0, QTableWidgetItem(""))
        self.table.setItem(r, 1, QTableWidgetItem(""))
        self.table.blockSignals(False)
        item = self.table.item(r, 0)
        if item is not None:
            self.table.editItem(item)

    def _remove(self) -> None:
        row = self.table.currentRow()
        if row >= 0:
            self.table.removeRow(row)
            self.changed.emit(self.values())
