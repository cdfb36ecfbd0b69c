"""The GPU power-limit control: bounded by the driver's constraints, applied in a worker thread.

Reading and setting go through :mod:`llm_dyno.core.telemetry.power`; this widget only shows the
constraints, the requested and the enforced limit, and any error the user can act on (e.g. no
permission). Without NVML it is disabled and says why.
"""

from __future__ import annotations

import html
import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSlider, QSpinBox, QWidget

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.nvml import NvmlUnavailable
from llm_dyno.core.telemetry.power import PowerLimit, read_power_limit, set_power_limit


class _Worker(QObject):
    """Runs a power call on a thread; the result comes back as a queued signal."""

    done = Signal(object)  # PowerLimit
    failed = Signal(str, bool)  # message, NVML unavailable

    def run(self, job: object) -> None:
        def work() -> None:
            try:
                result = job()  # type: ignore[operator]
            except NvmlUnavailable as exc:
                self.failed.emit(exc.reason, True)
            except DynoError as exc:
                self.failed.emit(str(exc), False)
            except Exception as exc:  # e.g. an NVML error the core did not wrap
                self.failed.emit(f"{type(exc).__name__}: {exc}", False)
            else:
                self.done.emit(result)

        threading.Thread(target=work, name="power-limit", daemon=True).start()


class PowerLimitControl(QWidget):
    """Spin box + slider + Apply for one GPU's power limit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.gpu = 0
        self.limit: PowerLimit | None = None
        self.requested_w: int | None = None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(8)
        title = QLabel("Power limit")
        title.setStyleSheet("font-weight: 600;")
        row.addWidget(title)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setMinimumWidth(140)
        self.spin = QSpinBox()
        self.spin.setSuffix(" W")
        self.spin.setKeyboardTracking(False)
        self.slider.valueChanged.connect(self.spin.setValue)
        self.spin.valueChanged.connect(self.slider.setValue)
        self.apply_button = QPushButton("Apply")
        self.apply_button.clicked.connect(self.apply)
        self.status = QLabel()
        self.status.setObjectName("sectionSubtitle")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for w in (self.slider, self.spin, self.apply_button):
            row.addWidget(w)
        row.addWidget(self.status, 1)
        self._worker = _Worker(self)
        self._worker.done.connect(self._got_limit)
        self._worker.failed.connect(self._failed)
        self._set_enabled(False)

    def _set_enabled(self, on: bool) -> None:
        for w in (self.slider, self.spin, self.apply_button):
            w.setEnabled(on)

    def set_unavailable(self, reason: str) -> None:
        """Disable the control and say why (e.g. no NVIDIA driver)."""
        self.limit = None
        self._set_enabled(False)
        self.spin.setRange(0, 0)
        self.spin.setSpecialValueText("— W")  # no limit known: not "0 W"
        self.status.setText(f"Unavailable: {reason}")
        self.setToolTip(reason)

    def refresh(self, gpu: int = 0) -> None:
        """Read GPU ``gpu``'s limit and constraints in a worker."""
        self.gpu = gpu
        self.status.setText("Reading the power limit…")
        self._worker.run(lambda: read_power_limit(gpu))

    def apply(self) -> None:
        """Set the chosen limit in a worker."""
        if self.limit is None:
            return
        watts, gpu = self.spin.value(), self.gpu
        self.requested_w = watts
        self._set_enabled(False)
        self.status.setText(f"Setting {watts} W…")
        self._worker.run(lambda: set_power_limit(gpu, float(watts)))

    def _got_limit(self, limit: PowerLimit) -> None:
        self.limit = limit
        lo = int(limit.min_w) if limit.min_w is not None else int(limit.current_w)
        hi = int(limit.max_w) if limit.max_w is not None else int(limit.current_w)
        self.spin.setSpecialValueText("")
        for w in (self.slider, self.spin):
            w.blockSignals(True)
            w.setRange(lo, hi)
            w.setValue(round(limit.current_w))
            w.blockSignals(False)
        can_set = limit.min_w is not None and limit.max_w is not None
        self._set_enabled(can_set)
        parts = [f"requested {limit.current_w:.0f} W"]
        if limit.enforced_w is not None:
            parts.insert(0, f"enforced {limit.enforced_w:.0f} W")
        parts.append(f"allowed {lo}–{hi} W")
        if limit.default_w is not None:
            parts.append(f"default {limit.default_w:.0f} W")
        if not can_set:
            parts.append("the driver reports no constraints")
        self.status.setText(" · ".join(parts))
        self.setToolTip("")

    def _failed(self, message: str, unavailable: bool) -> None:
        if unavailable:
            self.set_unavailable(message)
            return
        self._set_enabled(self.limit is not None)
        text = f"Could not set the limit: {html.escape(message)}"
        self.status.setText(f'<span style="color:#dc2626">{text}</span>')
