"""The pieces of the Diagnostics view: the ranked findings tree, the roofline gauge, the diff table."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFocusEvent,
    QFont,
    QFontMetrics,
    QKeyEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDoubleSpinBox,
    QHeaderView,
    QPushButton,
    QSizePolicy,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

from llm_dyno.core.bench.roofline import Roofline
from llm_dyno.core.diagnose.evidence import Finding, Severity
from llm_dyno.core.diagnose.gather import DiffLine
from llm_dyno.ui import theme

FINDING_ROLE = Qt.ItemDataRole.UserRole + 1


def severity_color(severity: Severity) -> str:
    """Red for high, amber for medium, accent for low, grey for info."""
    c = theme.colors()
    return {Severity.HIGH: c.red, Severity.MEDIUM: c.amber, Severity.LOW: c.accent}.get(severity, c.grey)


class TpsBox(QDoubleSpinBox):
    """Your measured tokens/s, or "auto" (0: from the latest benchmark of the profile).

    Typing a number replaces "auto" (a plain spin box would append to it and reject the digits), and
    focusing the box selects its text, so that a new number replaces the old one.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setRange(0, 100000)
        self.setDecimals(1)
        self.setSpecialValueText("auto")
        self.setToolTip("Your measured tokens/s; “auto” takes them from the latest benchmark of this profile")
        # keeps its arrows: with a style sheet and NoButtons, Qt gives the text field 1 px (text unseen)
        self.setFixedWidth(100)

    def focusInEvent(self, event: QFocusEvent) -> None:
        """Select the text (after the click that focused the box has placed the cursor)."""
        super().focusInEvent(event)
        QTimer.singleShot(0, self.selectAll)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """A digit typed over "auto" starts a new number."""
        if event.text().isdigit() and self.value() == self.minimum():
            self.lineEdit().clear()
        super().keyPressEvent(event)


class _WrappingDelegate(QStyledItemDelegate):
    """Draws a tree cell's text wrapped at the width it has (a spanned row: the whole row), and asks
    for the height that takes, instead of cutting it with "…"."""

    def __init__(self, tree: QTreeWidget) -> None:
        super().__init__(tree)
        self.tree = tree

    def _text_width(self, index: QModelIndex | QPersistentModelIndex) -> int:
        tree = self.tree
        depth, parent = 0, index.parent()
        while parent.isValid():
            depth, parent = depth + 1, parent.parent()
        plain = (
            index
            if isinstance(index, QModelIndex)
            else tree.model().index(index.row(), index.column(), index.parent())
        )
        item = tree.itemFromIndex(plain)
        spanned = index.column() == 0 and item is not None and item.isFirstColumnSpanned()
        width = tree.viewport().width() if spanned else tree.columnWidth(index.column())
        if index.column() == 0:
            width -= tree.indentation() * (depth + 1)
        return max(60, width - 12)

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        """Tall enough for the wrapped text."""
        base = super().sizeHint(option, index)
        text = index.data(Qt.ItemDataRole.DisplayRole)
        if not isinstance(text, str) or not text:
            return base
        font = index.data(Qt.ItemDataRole.FontRole)
        metrics = QFontMetrics(font if isinstance(font, QFont) else option.font)
        box = metrics.boundingRect(
            QRect(0, 0, self._text_width(index), 100_000), Qt.TextFlag.TextWordWrap, text
        )
        return QSize(base.width(), max(base.height(), box.height() + 8))

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        """The cell's background as the style draws it, then the text wrapped."""
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text, opt.text = opt.text, ""
        style = opt.widget.style() if opt.widget is not None else self.tree.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget)
        painter.save()
        painter.setFont(opt.font)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = opt.palette.ColorRole.HighlightedText if selected else opt.palette.ColorRole.Text
        foreground = index.data(Qt.ItemDataRole.ForegroundRole)  # a QBrush or QColor when set
        if selected or foreground is None:
            painter.setPen(opt.palette.color(role))
        else:
            painter.setPen(foreground.color() if hasattr(foreground, "color") else QColor(foreground))
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap
        painter.drawText(rect.adjusted(2, 0, -2, 0), int(flags), text)
        painter.restore()


class FindingsTree(QTreeWidget):
    """Findings in rank order; each expands to its evidence, advice and applicable change."""

    applyRequested = Signal(str)  # finding id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(["Finding", "Severity", "Impact"])
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(True)
        self.setUniformRowHeights(False)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.setItemDelegate(_WrappingDelegate(self))  # advice and evidence wrap instead of ending in "…"
        header.sectionResized.connect(lambda *_a: self.scheduleDelayedItemsLayout())
        self.findings: list[Finding] = []

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Re-measure the wrapped rows for the new width."""
        super().resizeEvent(event)
        self.scheduleDelayedItemsLayout()

    def set_findings(self, findings: Sequence[Finding]) -> None:
        """Show ranked findings (collapsed): the performance ones numbered, then the security ones apart
        under their own heading (they say nothing about the speed asked about)."""
        self.clear()
        self.findings = list(findings)
        c = theme.colors()
        bold = QFont(self.font())
        bold.setBold(True)
        rank = 0
        heading_done = False
        button_width = 0  # the widest "Apply to a copy": the Impact column shows it whole
        for f in self.findings:
            if f.impact.security and not heading_done:
                heading_done = True
                heading = QTreeWidgetItem(["Security — shown apart, not part of the speed ranking"])
                heading.setData(0, FINDING_ROLE, None)
                heading.setForeground(0, QColor(c.muted))
                heading.setFlags(Qt.ItemFlag.ItemIsEnabled)
                self.addTopLevelItem(heading)
                heading.setFirstColumnSpanned(True)
            if f.impact.security:
                label = f"• {f.title}"
            else:
                rank += 1
                label = f"{rank}. {f.title}"
            top = QTreeWidgetItem([label, f.severity.value, f.impact.describe()])
            top.setData(0, FINDING_ROLE, f.id)
            top.setFont(0, bold)
            top.setForeground(1, QColor(severity_color(f.severity)))
            top.setFont(1, bold)
            top.setToolTip(0, f.title)
            top.setToolTip(2, f.impact.basis or f.impact.describe())
            self.addTopLevelItem(top)
            evidence = QTreeWidgetItem(["Evidence"])
            evidence.setForeground(0, QColor(c.muted))
            top.addChild(evidence)
            for e in f.evidence:
                line = QTreeWidgetItem([e.describe()])
                line.setToolTip(0, e.describe())
                evidence.addChild(line)
            advice = QTreeWidgetItem([f"→ {f.advice}"])
            advice.setToolTip(0, f.advice)
            top.addChild(advice)
            if f.impact.basis:
                basis = QTreeWidgetItem([f"Impact basis: {f.impact.basis}"])
                basis.setForeground(0, QColor(c.muted))
                basis.setToolTip(0, f.impact.basis)
                top.addChild(basis)
            if f.applicable:
                change = QTreeWidgetItem(["Change: " + "; ".join(ch.describe() for ch in f.changes)])
                top.addChild(change)
                button = QPushButton("Apply to a copy")
                button.setObjectName(f"apply:{f.id}")
                button.setToolTip(
                    "Create a copy of the profile with this change; the original stays as it is"
                )
                button.clicked.connect(lambda _c=False, fid=f.id: self.applyRequested.emit(fid))
                self.setItemWidget(change, 2, button)
                button.setStyleSheet("QPushButton { padding: 0px 10px; }")  # fits a tree row
                button.setFixedHeight(20)
                change.setSizeHint(0, QSize(-1, button.sizeHint().height() + 2))
                button_width = max(button_width, button.sizeHint().width())
            for i in range(top.childCount()):
                child = top.child(i)
                child.setFirstColumnSpanned(child.text(0).startswith("Change: ") is False)
                for j in range(child.childCount()):
                    child.child(j).setFirstColumnSpanned(True)
        for i in range(self.topLevelItemCount()):
            self.topLevelItem(i).setExpanded(False)
        header = self.header()
        if button_width:
            header.setSectionResizeMode(2, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(2, max(button_width + 6, self.sizeHintForColumn(2)))
        else:
            header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)

    def item_for(self, finding_id: str) -> QTreeWidgetItem | None:
        """The top-level item of a finding."""
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            if item.data(0, FINDING_ROLE) == finding_id:
                return item
        return None

    def expand_finding(self, finding_id: str) -> list[str]:
        """Expand a finding (and its evidence); returns the texts now shown under it."""
        item = self.item_for(finding_id)
        if item is None:
            return []
        item.setExpanded(True)
        texts: list[str] = []
        for i in range(item.childCount()):
            child = item.child(i)
            child.setExpanded(True)
            texts.append(child.text(0))
            texts += [child.child(j).text(0) for j in range(child.childCount())]
        return texts


class RooflineGauge(QWidget):
    """Achieved tokens/s as a share of the decode ceiling; the assumptions are in the tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.roofline: Roofline | None = None
        self.reason = "Run a benchmark to compare with the ceiling."
        self.setMinimumHeight(112)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_roofline(self, roofline: Roofline | None, reason: str = "") -> None:
        """Show a ceiling (or why there is none); a share above 100 % is shown as the wrong input it is."""
        self.roofline = roofline
        self.reason = reason
        tip = ["Decode ceiling at batch size 1: memory bandwidth / bytes read per pass × tokens per pass."]
        if roofline is not None:
            tip = [roofline.describe(), "Assumed:", *(f"• {a}" for a in roofline.assumptions())]
        self.setToolTip("\n".join(tip))
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        c = theme.colors()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = self.roofline
        share = r.plausible_share if r is not None else None
        title = "Roofline: share of the decode ceiling"
        if r is None:
            detail = self.reason or "Not computable: needs the weights size from the log and a known GPU."
        else:
            passes = (
                f"{r.bandwidth_bytes_s / 1e9:.0f} GB/s / {r.bytes_per_pass / 1024**3:.2f} GiB × "
                f"{r.mean_acceptance_length:.2f} tokens per pass ({r.tokens_source})"
            )
            if r.problem is not None:
                detail = r.problem
            elif share is None:
                detail = f"ceiling {r.ceiling_tps:.0f} tok/s = {passes}; no measured tokens/s yet"
            else:
                detail = f"{r.achieved_tps:.1f} of {r.ceiling_tps:.0f} tok/s ceiling = {passes}"
            engine = r.engine_ceiling_tps
            if engine is not None:
                detail += f"; vLLM's own estimate: ceiling {engine:.0f} tok/s"
        p.setPen(QColor(c.text))
        f = QFont(self.font())
        f.setBold(True)
        p.setFont(f)
        p.drawText(QRectF(0, 0, self.width(), 20), Qt.AlignmentFlag.AlignLeft, title)
        p.setFont(self.font())
        p.setPen(QColor(c.muted))
        p.drawText(
            QRectF(0, 56, self.width(), self.height() - 56),
            Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap,
            detail,
        )
        bar = QRectF(0, 26, self.width() - 1, 24)
        p.setPen(QColor(c.border))
        p.setBrush(QColor(c.alt))
        p.drawRoundedRect(bar, 6, 6)
        if share is not None:
            color = c.green if share >= 0.6 else c.amber if share >= 0.4 else c.red
            fill = QRectF(bar.x(), bar.y(), bar.width() * min(share, 1.0), bar.height())
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(color))
            p.drawRoundedRect(fill, 6, 6)
            p.setPen(QColor(c.text))
            p.drawText(bar, Qt.AlignmentFlag.AlignCenter, f"{share:.0%}")
        elif r is not None and r.problem is not None:
            p.setPen(QColor(c.amber))
            p.drawText(bar, Qt.AlignmentFlag.AlignCenter, "above the ceiling: an input is wrong")
        else:
            p.setPen(QColor(c.muted))
            p.drawText(bar, Qt.AlignmentFlag.AlignCenter, "unknown")
        p.end()


class DiffTable(QTableWidget):
    """Config and environment rows: yours against the reference's."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 4, parent)
        self.setHorizontalHeaderLabels(["Group", "Setting", "Yours", "Reference"])
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setWordWrap(False)
        h = self.horizontalHeader()
        h.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        h.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        h.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        h.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)

    def set_lines(self, lines: Sequence[DiffLine]) -> None:
        """Fill the table; differing values are tinted."""
        c = theme.colors()
        self.setRowCount(0)
        for line in lines:
            row = self.rowCount()
            self.insertRow(row)
            for col, text in enumerate((line.group, line.key, line.yours, line.reference)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if col >= 2 and line.yours != line.reference and "—" not in (line.yours, line.reference):
                    item.setBackground(QColor(c.changed))
                self.setItem(row, col, item)
