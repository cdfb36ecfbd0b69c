"""The Diff view: pick two profiles, see what would launch differently, grouped and colour-coded."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QStackedWidget,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.profiles.diff import GROUPS, ProfileDiff, diff_profiles
from llm_dyno.core.profiles.model import Profile
from llm_dyno.ui import theme
from llm_dyno.ui.widgets.empty_state import EmptyState

KIND_TEXT = {"added": "only right", "removed": "only left", "changed": "changed"}


class DiffView(QWidget):
    """Two combo boxes and a tree of differences (group → rows)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._profiles: dict[str, Profile] = {}
        self.diff: ProfileDiff | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 16, 20, 16)
        layout.setSpacing(12)
        title = QLabel("Compare profiles")
        title.setObjectName("profileTitle")
        layout.addWidget(title)
        sub = QLabel(
            "What would launch differently — spelling, flag order and key order are not differences."
        )
        sub.setObjectName("profileSubtitle")
        layout.addWidget(sub)
        row = QHBoxLayout()
        self.left_box = QComboBox()
        self.right_box = QComboBox()
        for box in (self.left_box, self.right_box):
            box.setMinimumWidth(260)
            box.currentIndexChanged.connect(lambda _i: self.refresh())
        swap = QToolButton()
        swap.setText("⇄")
        swap.setToolTip("Swap left and right")
        swap.clicked.connect(self.swap)
        row.addWidget(QLabel("Left"))
        row.addWidget(self.left_box, 1)
        row.addWidget(swap)
        row.addWidget(QLabel("Right"))
        row.addWidget(self.right_box, 1)
        layout.addLayout(row)
        self.summary = QLabel()
        self.summary.setObjectName("sectionSubtitle")
        layout.addWidget(self.summary)

        self.stack = QStackedWidget()
        self.tree = QTreeWidget()
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["Setting", "Left", "Right", ""])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(False)
        self.tree.setUniformRowHeights(False)
        self.tree.setWordWrap(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.setColumnWidth(0, 240)
        self.stack.addWidget(self.tree)
        self.same = EmptyState("diff", "No differences", "These two profiles launch exactly the same server.")
        self.stack.addWidget(self.same)
        self.need_two = EmptyState(
            "diff", "Pick two profiles", "Choose a profile on each side to compare them."
        )
        self.stack.addWidget(self.need_two)
        layout.addWidget(self.stack, 1)

    def set_profiles(self, profiles: Sequence[Profile]) -> None:
        """Offer these profiles on both sides (keeps the current picks when still there)."""
        self._profiles = {p.name: p for p in profiles}
        names = list(self._profiles)
        pair = _closest_pair(list(profiles))
        for box, default in ((self.left_box, pair[0]), (self.right_box, pair[1])):
            current = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems(names)
            if current in names:
                box.setCurrentText(current)
            elif len(names) > default:
                box.setCurrentIndex(default)
            box.blockSignals(False)
        self.refresh()

    def follow(self, name: str | None) -> None:
        """The profile selected in the window goes on the left, compared with its closest sibling
        (the right side stays when it is another profile the user picked)."""
        if name is None or name not in self._profiles or self.left_box.currentText() == name:
            return
        right = self.right_box.currentText()
        if right == name or right not in self._profiles:
            right = _closest_to(name, list(self._profiles.values()))
        self.left_box.blockSignals(True)
        self.left_box.setCurrentText(name)
        self.left_box.blockSignals(False)
        self.compare(name, right)

    def compare(self, left: str, right: str) -> None:
        """Show the diff of two profiles by name."""
        self.left_box.setCurrentText(left)
        self.right_box.setCurrentText(right)
        self.refresh()

    def swap(self) -> None:
        """Exchange the two sides."""
        left, right = self.left_box.currentText(), self.right_box.currentText()
        self.compare(right, left)

    def refresh(self) -> None:
        """Recompute the diff for the two picks."""
        left = self._profiles.get(self.left_box.currentText())
        right = self._profiles.get(self.right_box.currentText())
        self.tree.clear()
        if left is None or right is None:
            self.diff = None
            self.summary.setText("")
            self.stack.setCurrentWidget(self.need_two)
            return
        self.diff = diff_profiles(left, right)
        if self.diff.is_empty:
            self.summary.setText("")
            self.stack.setCurrentWidget(self.same)
            return
        counts = {k: sum(1 for r in self.diff if r.kind == k) for k in ("changed", "added", "removed")}
        self.summary.setText(
            f"{len(self.diff)} difference{'s' if len(self.diff) != 1 else ''}: {counts['changed']} changed, "
            f"{counts['removed']} only left, {counts['added']} only right"
        )
        self._fill(self.diff)
        self.stack.setCurrentWidget(self.tree)

    def _fill(self, diff: ProfileDiff) -> None:
        c = theme.colors()
        backgrounds = {"added": c.added, "removed": c.removed, "changed": c.changed}
        fg = {"added": c.green, "removed": c.red, "changed": c.amber}
        bold = QFont(self.font())
        bold.setBold(True)
        for group in GROUPS:
            rows = [r for r in diff if r.group == group]
            if not rows:
                continue
            head = QTreeWidgetItem([group.capitalize(), "", "", ""])
            head.setFirstColumnSpanned(True)
            head.setFont(0, bold)
            head.setForeground(0, QBrush(QColor(c.muted)))
            head.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.tree.addTopLevelItem(head)
            for r in rows:
                item = QTreeWidgetItem(["   " + r.key, r.left or "—", r.right or "—", KIND_TEXT[r.kind]])
                item.setData(0, Qt.ItemDataRole.UserRole, r.kind)
                for col in range(4):
                    item.setBackground(col, QBrush(QColor(backgrounds[r.kind])))
                    item.setToolTip(col, f"{r.key}\nleft:  {r.left or '—'}\nright: {r.right or '—'}")
                item.setForeground(3, QBrush(QColor(fg[r.kind])))
                self.tree.addTopLevelItem(item)


def _closest_to(name: str, profiles: list[Profile]) -> str:
    """The other profile with the fewest differences from ``name`` (``name`` itself when alone)."""
    me = next(p for p in profiles if p.name == name)
    others = [p for p in profiles if p.name != name][:20]
    if not others:
        return name
    return min(others, key=lambda p: len(diff_profiles(me, p))).name


def _closest_pair(profiles: list[Profile]) -> tuple[int, int]:
    """Indices of the two most alike profiles (a useful first comparison); (0, 1) when many."""
    if len(profiles) < 3 or len(profiles) > 20:
        return 0, 1
    best = (0, 1)
    fewest = len(diff_profiles(profiles[0], profiles[1]))
    for i in range(len(profiles)):
        for j in range(i + 1, len(profiles)):
            n = len(diff_profiles(profiles[i], profiles[j]))
            if n < fewest:
                best, fewest = (i, j), n
    return best
