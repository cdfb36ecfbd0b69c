"""The GPU power-limit control: bounded by the driver's constraints, applied in a worker thread.

Reading and setting go through :mod:`llm_dyno.core.telemetry.power`; this widget only shows the
constraints, the requested and the enforced limit, and any error the user can act on (e.g. no
permission). Without NVML it is disabled and says why.

With several GPUs (tensor parallel) a selector offers "All" (the default: the same limit on each, as
``nvidia-smi -pl`` does; TP ranks run in lock step, so the slowest GPU sets the pace and unequal caps
waste the headroom of the others) or one GPU at a time.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Sequence

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSlider, QSpinBox, QWidget

from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.power_job import set_limits
from llm_dyno.core.telemetry.nvml import NvmlUnavailable
from llm_dyno.core.telemetry.power import PowerLimit, read_power_limit
from llm_dyno.ui.messages import window_message

TARGET_TIP = (
    "Which GPUs Apply sets. All: the same limit on each GPU of the server, checked against every "
    "GPU's allowed range before any is changed (tensor-parallel GPUs run in lock step, so the "
    "slowest sets the pace). Or pick one GPU to give it a limit of its own."
)


class _Worker(QObject):
    """Runs a power call on a thread; the result comes back as a queued signal."""

    done = Signal(object)  # PowerLimit or a tuple of them
    failed = Signal(str, bool)  # message, NVML unavailable

    def run(self, job: object) -> None:
        def work() -> None:
            try:
                result = job()  # type: ignore[operator]
            except NvmlUnavailable as exc:
                self.failed.emit(exc.reason, True)
            except DynoError as exc:
                self.failed.emit(window_message(exc), False)
            except Exception as exc:  # e.g. an NVML error the core did not wrap
                self.failed.emit(f"{type(exc).__name__}: {exc}", False)
            else:
                self.done.emit(result)

        threading.Thread(target=work, name="power-limit", daemon=True).start()


class PowerLimitControl(QWidget):
    """Spin box + slider + Apply for the power limit of the watched GPUs (a selector when several)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.gpus: tuple[int, ...] = (0,)
        self.limits: dict[int, PowerLimit] = {}
        self.requested_w: int | None = None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(8)
        title = QLabel("Power limit")
        title.setStyleSheet("font-weight: 600;")
        row.addWidget(title)
        self.target = QComboBox()
        self.target.setToolTip(TARGET_TIP)
        self.target.currentIndexChanged.connect(lambda _i: self._show())
        self.target.hide()
        row.addWidget(self.target)
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

    @property
    def targets(self) -> tuple[int, ...]:
        """The GPUs Apply sets: every watched GPU ("All"), or the one picked."""
        i = self.target.currentIndex()
        return self.gpus if i <= 0 or len(self.gpus) == 1 else (self.gpus[i - 1],)

    @property
    def limit(self) -> PowerLimit | None:
        """The limit of the first target GPU, once read."""
        return self.limits.get(self.targets[0])

    def set_unavailable(self, reason: str) -> None:
        """Disable the control and say why (e.g. no NVIDIA driver)."""
        self.limits = {}
        self.target.hide()
        self._set_enabled(False)
        self.spin.setRange(0, 0)
        self.spin.setSpecialValueText("— W")  # no limit known: not "0 W"
        self.status.setText(f"Unavailable: {reason}")
        self.setToolTip(reason)

    def set_gpus(self, gpus: Sequence[int]) -> None:
        """The GPUs this control sets (the selector shows when there are several)."""
        self.gpus = tuple(gpus) or (0,)
        self.limits = {}
        self.target.blockSignals(True)
        self.target.clear()
        if len(self.gpus) > 1:
            self.target.addItem(f"All (GPU {'+'.join(map(str, self.gpus))})")
            for g in self.gpus:
                self.target.addItem(f"GPU {g}")
        self.target.blockSignals(False)
        self.target.setVisible(len(self.gpus) > 1)

    def refresh(self, gpus: Sequence[int] = (0,)) -> None:
        """Read the limits and constraints of ``gpus`` in a worker."""
        self.set_gpus(gpus)
        wanted = self.gpus
        self.status.setText("Reading the power limit…")
        self._worker.run(lambda: tuple(read_power_limit(g) for g in wanted))

    def apply(self) -> None:
        """Set the chosen limit on the target GPUs in a worker."""
        if self.limit is None:
            return
        watts, targets = self.spin.value(), self.targets
        self.requested_w = watts
        self._set_enabled(False)
        self.status.setText(f"Setting {watts} W…")
        # a job with the GPUs' locks: refused while a power-cap sweep holds one of them
        self._worker.run(lambda: set_limits(targets, float(watts), "the dashboard's power control"))

    def _got_limit(self, limits: PowerLimit | tuple[PowerLimit, ...]) -> None:
        for limit in limits if isinstance(limits, tuple) else (limits,):
            self.limits[limit.gpu] = limit
        self._show()

    def _show(self) -> None:
        """Range, value and figures of the target GPUs (their common allowed range when several)."""
        chosen = [self.limits[g] for g in self.targets if g in self.limits]
        if not chosen:
            return
        first = chosen[0]
        lo = max(int(x.min_w if x.min_w is not None else x.current_w) for x in chosen)
        hi = min(int(x.max_w if x.max_w is not None else x.current_w) for x in chosen)
        self.spin.setSpecialValueText("")
        for w in (self.slider, self.spin):
            w.blockSignals(True)
            w.setRange(lo, hi)
            w.setValue(round(first.current_w))
            w.blockSignals(False)
        can_set = all(x.min_w is not None and x.max_w is not None for x in chosen) and lo <= hi
        self._set_enabled(can_set)
        if len(chosen) == 1:
            parts = [f"requested {first.current_w:.0f} W"]
            if first.enforced_w is not None:
                parts.insert(0, f"enforced {first.enforced_w:.0f} W")
        else:
            parts = [
                f"GPU {x.gpu} {x.current_w:.0f} W"
                + (f" (enforced {x.enforced_w:.0f})" if x.enforced_w not in (None, x.current_w) else "")
                for x in chosen
            ]
        parts.append(f"allowed {lo}–{hi} W")
        if first.default_w is not None:
            parts.append(f"default {first.default_w:.0f} W")
        if not can_set:
            parts.append("the driver reports no constraints" if lo <= hi else "no range all GPUs allow")
        self.status.setText(" · ".join(parts))
        self.setToolTip("")

    def _failed(self, message: str, unavailable: bool) -> None:
        if unavailable:
            self.set_unavailable(message)
            return
        self._set_enabled(self.limit is not None)
        text = f"Could not set the limit: {html.escape(message)}"
        self.status.setText(f'<span style="color:#dc2626">{text}</span>')
