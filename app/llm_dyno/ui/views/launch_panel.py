"""The launch panel: the phases from pulling to ready as steps, progress, elapsed time and detail."""

from __future__ import annotations

import time
from collections.abc import Sequence

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QVBoxLayout, QWidget

from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.core.runtime.launch_spec import PlanWarning
from llm_dyno.ui import theme
from llm_dyno.ui.text import warnings_text

STEPS: tuple[tuple[ServerState, str], ...] = (
    (ServerState.PULLING, "Pulling image"),
    (ServerState.CREATING, "Creating"),
    (ServerState.STARTING, "Starting vLLM"),
    (ServerState.LOADING_WEIGHTS, "Loading weights"),
    (ServerState.COMPILING, "Compiling"),
    (ServerState.CAPTURING_GRAPHS, "Capturing CUDA graphs"),
    (ServerState.READY, "Ready"),
)
_ORDER = {state: i for i, (state, _label) in enumerate(STEPS)}

HEADLINES = {
    ServerState.READY: "Serving",
    ServerState.STOPPING: "Stopping…",
    ServerState.STOPPED: "Stopped",
    ServerState.FAILED: "Failed to start",
}


def format_elapsed(seconds: float) -> str:
    """``75`` → ``1:15``; ``3725`` → ``1:02:05``."""
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class _Dot(QWidget):
    """A step marker: done (filled, check), current (ring), to do (hollow)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFixedSize(18, 18)
        self.mode = "todo"

    def paintEvent(self, _event: QPaintEvent) -> None:
        c = theme.colors()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        color = {"done": c.green, "current": c.amber, "failed": c.red}.get(self.mode, c.grey)
        if self.mode in ("done", "failed"):
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(color))
            p.drawEllipse(2, 2, 14, 14)
            p.setPen(QColor("#ffffff"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "✓" if self.mode == "done" else "✕")
        else:
            pen = p.pen()
            pen.setColor(QColor(color))
            pen.setWidth(3 if self.mode == "current" else 2)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawEllipse(3, 3, 12, 12)
        p.end()


class LaunchPanel(QFrame):
    """Shows one server's way up: each phase a step; the current one highlighted."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("emptyCard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 18, 24, 18)
        layout.setSpacing(8)
        head = QHBoxLayout()
        self.headline = QLabel("Launching…")
        self.headline.setObjectName("profileTitle")
        head.addWidget(self.headline)
        head.addStretch(1)
        self.elapsed = QLabel("0:00")
        self.elapsed.setObjectName("profileSubtitle")
        self.elapsed.setToolTip("Time since launch")
        head.addWidget(self.elapsed)
        layout.addLayout(head)
        self.url = QLabel()
        self.url.setObjectName("profileSubtitle")
        self.url.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.url)
        layout.addSpacing(6)
        self.dots: dict[ServerState, _Dot] = {}
        self.labels: dict[ServerState, QLabel] = {}
        for state, label in STEPS:
            row = QHBoxLayout()
            row.setSpacing(10)
            dot = _Dot()
            text = QLabel(label)
            row.addWidget(dot)
            row.addWidget(text, 1)
            layout.addLayout(row)
            self.dots[state] = dot
            self.labels[state] = text
        layout.addSpacing(6)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        layout.addWidget(self.progress)
        self.detail = QLabel()
        self.detail.setObjectName("sectionSubtitle")
        self.detail.setWordWrap(True)
        layout.addWidget(self.detail)
        self.warnings = QLabel()
        self.warnings.setObjectName("launchWarnings")
        self.warnings.setWordWrap(True)
        self.warnings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.warnings.hide()
        layout.addWidget(self.warnings)
        self.budget = QLabel()  # the GPU memory budget the launch passed (core/runtime/gpu_budget.py)
        self.budget.setObjectName("launchBudget")
        self.budget.setWordWrap(True)
        self.budget.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.budget.hide()
        layout.addWidget(self.budget)
        self.kv_compare = QLabel()  # the memory estimate next to vLLM's own KV capacity, once logged
        self.kv_compare.setObjectName("sectionSubtitle")
        self.kv_compare.setWordWrap(True)
        self.kv_compare.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.kv_compare.hide()
        layout.addWidget(self.kv_compare)
        self._started: float | None = None
        self._ended: float | None = None
        self.status: ServerStatus | None = None
        self._reached = -1
        self._skipped: set[ServerState] = set()
        self._tick = QTimer(self)
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self._update_elapsed)

    def set_runtime(self, runtime: str, args: Sequence[str] = ()) -> None:
        """Show only the steps this server goes through: a local process pulls and creates nothing;
        ``--enforce-eager`` skips torch.compile and CUDA graphs (vLLM says so in its log, too)."""
        skipped: set[ServerState] = set()
        if runtime == "process":
            skipped |= {ServerState.PULLING, ServerState.CREATING}
        if "--enforce-eager" in args:
            skipped |= {ServerState.COMPILING, ServerState.CAPTURING_GRAPHS}
        self._skipped = skipped
        self._show_rows()

    def _show_rows(self) -> None:
        state = self.status.state if self.status is not None else None
        for s, _label in STEPS:
            visible = s not in self._skipped
            if state is ServerState.STOPPED:
                visible = False  # a stopped server's way up is history: no empty circles
            elif state in (ServerState.READY, ServerState.FAILED) and self.dots[s].mode == "todo":
                visible = False  # never reached (e.g. no CUDA graphs on a CPU): not a step it took
            self.dots[s].setVisible(visible)
            self.labels[s].setVisible(visible)

    def start(self, url: str = "", started_at: float | None = None) -> None:
        """A new launch begins: all steps to do, the clock at zero."""
        self._started = started_at or time.time()
        self._ended = None
        self._reached = -1
        self.status = None
        self.url.setText(url)
        self.headline.setText("Launching…")
        self.detail.clear()
        self.progress.hide()
        for state in self.dots:
            self._mark(state, "todo")
        self.elapsed.show()
        self._show_rows()
        self._tick.start()
        self._update_elapsed()

    def set_status(self, status: ServerStatus) -> None:
        """Show a status: steps before the current one done, the current one highlighted."""
        if self._started is None:
            self.start()
        self.status = status
        state = status.state
        if state in _ORDER:
            self._reached = max(self._reached, _ORDER[state])
        for s, i in _ORDER.items():
            if i < self._reached or (i == self._reached and state is ServerState.READY):
                mode = "done"
            elif i == self._reached:
                mode = "failed" if state is ServerState.FAILED else "current"
            else:
                mode = "todo"
            if state is ServerState.FAILED and i == max(self._reached, 0) and self._reached >= 0:
                mode = "failed"
            self._mark(s, mode)
        label = next((text for s, text in STEPS if s is state), "")
        self.headline.setText(HEADLINES.get(state, f"{label}…"))
        self.detail.setText(status.detail)
        if status.progress is not None and state.is_loading:
            self.progress.setValue(int(max(0.0, min(1.0, status.progress)) * 1000))
            self.progress.setFormat(f"{status.progress * 100:.0f} %")
            self.progress.show()
        else:
            self.progress.hide()
        if not state.is_loading and self._ended is None and state is not ServerState.READY:
            self._ended = time.time()
            self._tick.stop()
        if state is ServerState.READY:
            self._ended = time.time()
            self._tick.stop()
        self.elapsed.setVisible(state is not ServerState.STOPPED)  # "0:00" of a server not launched here
        self._show_rows()
        self._update_elapsed()

    def set_warnings(self, warnings: Sequence[PlanWarning]) -> None:
        """The launch plan's warnings (loopback ports, relative paths, no GPUs…), under the steps."""
        self.warnings.setText(warnings_text(warnings))
        self.warnings.setStyleSheet(f"color: {theme.colors().amber};")
        self.warnings.setVisible(bool(warnings))

    def set_budget(self, lines: Sequence[str]) -> None:
        """The GPU budget of the launch, a line per GPU (none: hidden)."""
        self.budget.setText("\n".join(f"GPU budget: {line}" for line in lines))
        self.budget.setVisible(bool(lines))

    def set_kv_comparison(self, line: str | None) -> None:
        """``KV cache: vLLM N tokens · estimate M (…)`` (None: hidden)."""
        self.kv_compare.setText(line or "")
        self.kv_compare.setVisible(bool(line))

    def current_step(self) -> ServerState | None:
        """The step highlighted now."""
        return next((s for s, d in self.dots.items() if d.mode in ("current", "failed")), None)

    def _mark(self, state: ServerState, mode: str) -> None:
        dot = self.dots[state]
        dot.mode = mode
        dot.update()
        c = theme.colors()
        color = {"done": c.text, "current": c.text, "failed": c.red}.get(mode, c.muted)
        weight = "600" if mode in ("current", "failed") else "400"
        self.labels[state].setStyleSheet(f"color: {color}; font-weight: {weight};")

    def _update_elapsed(self) -> None:
        if self._started is None:
            return
        end = self._ended or time.time()
        prefix = "ready after " if self.status is not None and self.status.state is ServerState.READY else ""
        self.elapsed.setText(prefix + format_elapsed(end - self._started))
