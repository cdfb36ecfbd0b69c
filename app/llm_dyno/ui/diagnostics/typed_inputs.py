"""The Diagnostics view's typed figures, as ``diagnose`` takes them: ``--tps NARR CODE``,
``--acceptance RATES``, ``--mean-acceptance-length L``, ``--power-cap W`` and ``--no-spec-tps X``;
0 / empty is "auto"."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QLineEdit, QWidget

from llm_dyno.core.diagnose.inputs import Measured, parse_acceptance
from llm_dyno.ui.diagnostics.widgets import TpsBox

_LENGTH_TIP = (
    "Your mean acceptance length (tokens per pass, e.g. 3.55) where the per-position rates are not "
    "known. “auto”: from the benchmark, /metrics or the log"
)


class TypedInputs(QWidget):
    """Your figures in two short rows (the view fits beside the sidebar at 1100 px); ``changed`` when
    one was edited (the view remembers them for the profile)."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setColumnStretch(0, 1)
        self.narr_box = TpsBox()
        self.code_box = TpsBox()
        accept_label = QLabel("acceptance")  # short: the row fits beside the sidebar at 1100 px
        accept_label.setToolTip("acceptance per draft position, in percent or as fractions")
        self.acceptance_edit = QLineEdit()  # a post's own figures: "93,86.6,73.9" (percent or fractions)
        self.acceptance_edit.setPlaceholderText("auto, or 93,86.6,73.9")
        self.acceptance_edit.setToolTip(
            "Your per-position acceptance rates, one per draft position, in percent or as fractions; "
            "empty: from the benchmark, /metrics or the log"
        )
        self.acceptance_edit.setFixedWidth(150)  # the placeholder whole in the theme's padding
        self.length_box = TpsBox()  # --mean-acceptance-length: where only the mean is known
        self.length_box.setDecimals(2)
        self.length_box.setRange(0, 64)
        self.length_box.setToolTip(_LENGTH_TIP)
        self.power_box = TpsBox()  # 0: "auto" (the profile's cap or the GPU's)
        self.power_box.setDecimals(0)
        self.power_box.setRange(0, 2000)
        self.power_box.setToolTip("The power cap your numbers were measured at; “auto” takes the profile's")
        self.no_spec_box = TpsBox()  # --no-spec-tps: the same setup without speculative decoding
        self.no_spec_box.setToolTip(
            "Your narrative TPS with speculative decoding off (same image, model and GPU): splits the "
            "time per pass into target forward and speculation overhead against the reference's "
            "no-spec row. “auto”: from the profile's stored spec-decode A/B, if any"
        )
        # two rows right-aligned under the buttons: the TPS and the cap, then the acceptance
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        cells = (
            (0, 1, QLabel("Your TPS: narrative")), (0, 2, self.narr_box),
            (0, 3, QLabel("code")), (0, 4, self.code_box),
            (0, 5, QLabel("power cap W")), (0, 6, self.power_box),
            (1, 1, accept_label), (1, 2, self.acceptance_edit),
            (1, 3, QLabel("mean length")), (1, 4, self.length_box),
            (1, 5, QLabel("no-spec TPS")), (1, 6, self.no_spec_box),
        )  # fmt: skip
        for row, col, widget in cells:
            grid.addWidget(
                widget, row, col, right if isinstance(widget, QLabel) else Qt.AlignmentFlag.AlignLeft
            )
        for box in (self.narr_box, self.code_box, self.length_box, self.power_box, self.no_spec_box):
            box.editingFinished.connect(self.changed)
        self.acceptance_edit.editingFinished.connect(self.changed)

    def set_values(self, typed: Measured | None) -> None:
        """Show remembered figures (None: all "auto"); sends no ``changed``."""
        for box, value in ((self.narr_box, typed.narrative_tps if typed else None),
                           (self.code_box, typed.code_tps if typed else None),
                           (self.length_box, typed.mean_acceptance_length if typed else None),
                           (self.power_box, typed.power_cap_w if typed else None),
                           (self.no_spec_box, typed.no_spec_tps if typed else None)):  # fmt: skip
            box.blockSignals(True)
            box.setValue(value or 0.0)
            box.blockSignals(False)
        rates = typed.acceptance_per_position if typed else ()
        self.acceptance_edit.setText(",".join(f"{r * 100:g}" for r in rates))

    def typed_acceptance(self) -> tuple[float, ...]:
        """The typed per-position rates as fractions; () when empty or not readable (the box says why)."""
        text = self.acceptance_edit.text().strip()
        if not text:
            self.acceptance_edit.setStyleSheet("")
            return ()
        try:
            rates = parse_acceptance(text)
        except ValueError as exc:
            self.acceptance_edit.setStyleSheet("border: 1px solid #d9534f;")
            self.acceptance_edit.setToolTip(f"not used: {exc}")
            return ()
        self.acceptance_edit.setStyleSheet("")
        return rates

    def typed(self) -> Measured | None:
        """The typed figures as the CLI's typed options give them (None: nothing typed)."""
        narr, code = self.narr_box.value() or None, self.code_box.value() or None
        cap = self.power_box.value() or None
        rates = self.typed_acceptance()
        length = self.length_box.value() or None
        refused = length is not None and length < 1  # as --mean-acceptance-length refuses it
        self.length_box.setStyleSheet("border: 1px solid #d9534f;" if refused else "")
        self.length_box.setToolTip(
            f"not used: {length:g} is not a mean acceptance length (tokens per pass: 1 plus the accepted "
            "drafts, e.g. 3.55)"
            if refused and length is not None
            else _LENGTH_TIP
        )
        if refused:
            length = None
        no_spec = self.no_spec_box.value() or None
        if narr is None and code is None and cap is None and not rates and length is None and no_spec is None:
            return None
        return Measured(narr, code, rates, length, "typed", power_cap_w=cap, no_spec_tps=no_spec)
