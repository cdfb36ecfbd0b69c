"""Power-cap sweep: caps entry, TPS and tokens/J against the cap with the knee marked, and the offer
to save the recommended cap into the profile. Disabled, with the reason, without power control."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.bench.sweep import SweepResult, sweep_table
from llm_dyno.ui.bench.charts import SweepChart
from llm_dyno.ui.bench.power import parse_caps
from llm_dyno.ui.messages import window_message

DEFAULT_CAPS = "230, 260, 290, 330"


class SweepPanel(QWidget):
    """Asks the view to sweep (``sweepRequested(caps)``) and shows the outcome."""

    sweepRequested = Signal(list)  # caps in watts
    saveCapRequested = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unavailable: str | None = None
        self.sweep: SweepResult | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Caps (W)"))
        self.caps = QLineEdit(DEFAULT_CAPS)
        self.caps.setToolTip(
            "Power limits to benchmark at, lowest to highest; the original limit is restored after"
        )
        row.addWidget(self.caps, 1)
        self.run_button = QPushButton("Run sweep")
        self.run_button.setObjectName("primaryButton")
        self.run_button.clicked.connect(self._run)
        row.addWidget(self.run_button)
        layout.addLayout(row)
        self.reason = QLabel()
        self.reason.setObjectName("fieldHint")
        self.reason.setWordWrap(True)
        self.reason.hide()
        layout.addWidget(self.reason)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.chart = SweepChart()
        split.addWidget(self.chart)
        self.table = QPlainTextEdit()
        self.table.setReadOnly(True)
        self.table.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.table.setPlaceholderText("The community's sweep table appears here, ready to paste.")
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        offer = QHBoxLayout()
        self.knee_label = QLabel("")
        offer.addWidget(self.knee_label, 1)
        self.save_button = QPushButton("Save recommended cap into profile")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self._save)
        offer.addWidget(self.save_button)
        layout.addLayout(offer)

    def set_unavailable(self, reason: str | None) -> None:
        """Disable the sweep with ``reason`` shown (None: enable it)."""
        self.unavailable = reason
        self.run_button.setEnabled(reason is None)
        self.run_button.setToolTip(reason or "")
        self.reason.setText(reason or "")
        self.reason.setVisible(reason is not None)

    def set_busy(self, busy: bool) -> None:
        """While any benchmark runs, no sweep can start."""
        self.run_button.setEnabled(not busy and self.unavailable is None)

    def _run(self) -> None:
        try:
            caps = parse_caps(self.caps.text())
        except ValueError as exc:
            self.reason.setText(window_message(exc))
            self.reason.show()
            return
        self.sweepRequested.emit(caps)

    def show_sweep(self, sweep: SweepResult, can_save: bool) -> None:
        """Plot a finished sweep and offer its knee."""
        self.sweep = sweep
        self.chart.set_sweep(sweep)
        self.table.setPlainText(sweep_table(sweep))
        knee = sweep.recommended_cap()
        self.knee_label.setText(
            f"Recommended cap: {knee:.0f} W (the lowest cap within 5 % of the best throughput)"
            if knee is not None
            else "No recommendation: no cap produced a throughput."
        )
        self.save_button.setEnabled(knee is not None and can_save)

    def _save(self) -> None:
        knee = self.sweep.recommended_cap() if self.sweep is not None else None
        if knee is not None:
            self.saveCapRequested.emit(knee)
