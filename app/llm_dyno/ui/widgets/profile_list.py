"""The sidebar: a filter box, the profile list (name, runtime and model, a state lamp) and + / import."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QPainter, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.profiles.store import StoredProfile
from llm_dyno.ui import theme
from llm_dyno.ui.icons import icon
from llm_dyno.ui.text import subtitle_of

SUBTITLE_ROLE = Qt.ItemDataRole.UserRole + 1
LAMP_ROLE = Qt.ItemDataRole.UserRole + 2  # "stopped" | "loading" | "ready" | "failed"
DIRTY_ROLE = Qt.ItemDataRole.UserRole + 3
NAME_ROLE = Qt.ItemDataRole.UserRole + 4

_Index = QModelIndex | QPersistentModelIndex


def lamp_color(lamp: str) -> str:
    """The colour of a state lamp."""
    c = theme.colors()
    return {"ready": c.green, "loading": c.amber, "failed": c.red}.get(lamp, c.grey)


class ProfileDelegate(QStyledItemDelegate):
    """Two lines per profile: bold name (• when unsaved) and runtime · image · model; a lamp on the left."""

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:
        return QSize(200, option.fontMetrics.height() * 2 + 22)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        c = theme.colors()
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = option.rect.adjusted(6, 2, -6, -2)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        hovered = bool(option.state & QStyle.StateFlag.State_MouseOver)
        if selected:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.badgebg))
            painter.drawRoundedRect(rect, 8, 8)
        elif hovered:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.hover))
            painter.drawRoundedRect(rect, 8, 8)
        lamp = str(index.data(LAMP_ROLE) or "stopped")
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(lamp_color(lamp)))
        fm = option.fontMetrics
        cy = rect.top() + 11 + fm.height() // 2
        painter.drawEllipse(rect.left() + 10, cy - 5, 10, 10)
        text_left = rect.left() + 30
        width = rect.right() - text_left - 8
        name = str(index.data(NAME_ROLE) or "")
        if index.data(DIRTY_ROLE):
            name = "• " + name
        bold = QFont(option.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(QColor(c.text))
        name_rect = QRect(text_left, rect.top() + 9, width, fm.height())
        painter.drawText(
            name_rect,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            painter.fontMetrics().elidedText(name, Qt.TextElideMode.ElideRight, width),
        )
        small = QFont(option.font)
        small.setPointSizeF(max(7.5, small.pointSizeF() - 1))
        painter.setFont(small)
        painter.setPen(QColor(c.muted))
        sub_rect = QRect(text_left, name_rect.bottom() + 3, width, fm.height())
        painter.drawText(
            sub_rect,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            painter.fontMetrics().elidedText(
                str(index.data(SUBTITLE_ROLE) or ""), Qt.TextElideMode.ElideMiddle, width
            ),
        )
        painter.restore()


class _Filter(QSortFilterProxyModel):
    needle = ""

    def set_needle(self, text: str) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt ≥ 6.10 replaces invalidateFilter()
            self.beginFilterChange()
            self.needle = text.strip().lower()
            self.endFilterChange()
        else:
            self.needle = text.strip().lower()
            self.invalidateFilter()

    def filterAcceptsRow(self, row: int, parent: _Index) -> bool:
        needle = self.needle
        if not needle:
            return True
        idx = self.sourceModel().index(row, 0, parent)
        hay = f"{idx.data(NAME_ROLE)} {idx.data(SUBTITLE_ROLE)}".lower()
        return all(word in hay for word in needle.split())


class ProfileList(QWidget):
    """The profile sidebar. ``currentChanged(name)`` fires when the user picks another profile."""

    currentChanged = Signal(str)
    newRequested = Signal()
    importRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 12, 10, 10)
        layout.setSpacing(8)
        head = QHBoxLayout()
        title = QLabel("PROFILES")
        title.setObjectName("sidebarTitle")
        head.addWidget(title)
        head.addStretch(1)
        self.add_button = QToolButton()
        self.add_button.setObjectName("sidebarButton")
        self.add_button.setIcon(icon("add"))
        self.add_button.setToolTip("New profile (Ctrl+N)")
        self.add_button.clicked.connect(self.newRequested)
        self.import_button = QToolButton()
        self.import_button.setObjectName("sidebarButton")
        self.import_button.setIcon(icon("import"))
        self.import_button.setToolTip("Import a compose file, docker run or vllm serve command (Ctrl+I)")
        self.import_button.clicked.connect(self.importRequested)
        head.addWidget(self.add_button)
        head.addWidget(self.import_button)
        layout.addLayout(head)
        self.filter = QLineEdit()
        self.filter.setObjectName("filterBox")
        self.filter.setPlaceholderText("Filter profiles  (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.filter.addAction(icon("filter", theme.colors().muted), QLineEdit.ActionPosition.LeadingPosition)
        layout.addWidget(self.filter)
        self.model = QStandardItemModel(self)
        self.proxy = _Filter(self)
        self.proxy.setSourceModel(self.model)
        self.filter.textChanged.connect(self.proxy.set_needle)
        self.view = QListView()
        self.view.setObjectName("profileList")
        self.view.setModel(self.proxy)
        self.view.setItemDelegate(ProfileDelegate(self.view))
        self.view.setMouseTracking(True)
        self.view.setUniformItemSizes(True)
        self.view.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.view.selectionModel().currentChanged.connect(self._current_changed)
        layout.addWidget(self.view, 1)
        self.count_label = QLabel()
        self.count_label.setObjectName("sectionSubtitle")
        layout.addWidget(self.count_label)
        self._guard = False

    def set_profiles(self, profiles: Sequence[StoredProfile], keep: str | None = None) -> None:
        """Show these profiles; select ``keep`` (or the current one) if still there."""
        current = keep if keep is not None else self.current_name()
        lamps = {
            self.model.item(r).data(NAME_ROLE): self.model.item(r).data(LAMP_ROLE)
            for r in range(self.model.rowCount())
        }
        self._guard = True
        try:
            self.model.clear()
            for sp in profiles:
                item = QStandardItem(sp.profile.name)
                item.setData(sp.profile.name, NAME_ROLE)
                item.setData(subtitle_of(sp.profile), SUBTITLE_ROLE)
                item.setData(lamps.get(sp.profile.name, "stopped"), LAMP_ROLE)
                item.setData(False, DIRTY_ROLE)
                item.setToolTip(f"{sp.profile.name}\n{sp.path}")
                self.model.appendRow(item)
        finally:
            self._guard = False
        n = len(profiles)
        self.count_label.setText(f"{n} profile{'s' if n != 1 else ''}")
        if current and self.select(current, notify=False):
            return
        if self.proxy.rowCount() and current is None:
            self.view.setCurrentIndex(self.proxy.index(0, 0))

    def names(self) -> list[str]:
        """All profile names in the list (filtered or not)."""
        return [str(self.model.item(r).data(NAME_ROLE)) for r in range(self.model.rowCount())]

    def current_name(self) -> str | None:
        """The selected profile's name."""
        idx = self.view.currentIndex()
        return str(idx.data(NAME_ROLE)) if idx.isValid() else None

    def select(self, name: str, notify: bool = True) -> bool:
        """Select a profile by name; False if it is not shown."""
        for r in range(self.proxy.rowCount()):
            idx = self.proxy.index(r, 0)
            if idx.data(NAME_ROLE) == name:
                self._guard = not notify
                try:
                    self.view.setCurrentIndex(idx)
                finally:
                    self._guard = False
                return True
        return False

    def _item(self, name: str) -> QStandardItem | None:
        for r in range(self.model.rowCount()):
            item = self.model.item(r)
            if item.data(NAME_ROLE) == name:
                return item
        return None

    def set_dirty(self, name: str, dirty: bool) -> None:
        """Mark a profile as having unsaved changes (•)."""
        item = self._item(name)
        if item is not None:
            item.setData(dirty, DIRTY_ROLE)

    def set_lamp(self, name: str, lamp: str) -> None:
        """Set a profile's state lamp: stopped (grey), loading (amber), ready (green), failed (red)."""
        item = self._item(name)
        if item is not None:
            item.setData(lamp, LAMP_ROLE)

    def lamp(self, name: str) -> str | None:
        """A profile's lamp."""
        item = self._item(name)
        return str(item.data(LAMP_ROLE)) if item is not None else None

    def focus_filter(self) -> None:
        """Put the cursor in the filter box."""
        self.filter.setFocus()
        self.filter.selectAll()

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not self._guard and current.isValid():
            self.currentChanged.emit(str(current.data(NAME_ROLE)))
