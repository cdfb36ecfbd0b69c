"""The Dashboard view for now: the selected profile's server — launch progress, failure, or idle."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QStackedWidget, QVBoxLayout, QWidget

from llm_dyno.core.runtime.base import ServerState, ServerStatus
from llm_dyno.ui.views.failure_panel import FailurePanel
from llm_dyno.ui.views.launch_panel import LaunchPanel
from llm_dyno.ui.widgets.empty_state import EmptyState


class ServerView(QWidget):
    """Idle: an invitation to launch. Otherwise the launch panel, and the failure panel when it died."""

    launchRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.stack = QStackedWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)
        self.idle = EmptyState(
            "dashboard",
            "Not running",
            "Launch this profile to watch it come up: pulling, loading weights, compiling, "
            "capturing CUDA graphs, ready.",
            [
                "Live graphs (coming soon): tokens/s, acceptance, GPU power against its limit, KV cache",
                "If it fails, the reason, what to do, and the log lines that show it",
            ],
        )
        self.launch_button = self.idle.add_action("Launch", primary=True)
        self.launch_button.clicked.connect(self.launchRequested)
        self.stack.addWidget(self.idle)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        page = QWidget()
        page.setObjectName("formContent")
        col = QVBoxLayout(page)
        col.setContentsMargins(24, 20, 24, 20)
        col.setSpacing(14)
        row = QHBoxLayout()
        self.launch_panel = LaunchPanel()
        self.launch_panel.setMaximumWidth(640)
        row.addWidget(self.launch_panel, 1)
        side = QVBoxLayout()
        self.failure_panel = FailurePanel()
        side.addWidget(self.failure_panel)
        self.graphs_note = QLabel(
            "Live graphs of tokens/s, speculative acceptance, GPU power and KV cache will appear here."
        )
        self.graphs_note.setObjectName("sectionSubtitle")
        self.graphs_note.setWordWrap(True)
        side.addWidget(self.graphs_note)
        side.addStretch(1)
        row.addLayout(side, 1)
        col.addLayout(row)
        col.addStretch(1)
        scroll.setWidget(page)
        self.stack.addWidget(scroll)
        self._scroll = scroll
        self.profile: str | None = None

    def show_idle(self, profile: str | None, can_launch: bool = True) -> None:
        """No server for this profile."""
        self.profile = profile
        self.launch_button.setEnabled(can_launch and profile is not None)
        self.idle.title.setText("Not running" if profile else "No profile selected")
        self.stack.setCurrentWidget(self.idle)

    def start(self, profile: str, url: str, runtime: str = "docker") -> None:
        """A launch of ``profile`` begins."""
        self.profile = profile
        self.launch_panel.set_runtime(runtime)
        self.launch_panel.start(url)
        self.failure_panel.set_reason(None)
        self.stack.setCurrentWidget(self._scroll)

    def set_status(
        self, profile: str, status: ServerStatus, url: str = "", runtime: str | None = None
    ) -> None:
        """Show the status of ``profile``'s server."""
        self.profile = profile
        if runtime:
            self.launch_panel.set_runtime(runtime)
        if self.stack.currentWidget() is not self._scroll or self.launch_panel.status is None:
            self.launch_panel.start(url, started_at=status.since if status.state.is_loading else None)
            self.stack.setCurrentWidget(self._scroll)
        if url:
            self.launch_panel.url.setText(url)
        self.launch_panel.set_status(status)
        self.failure_panel.set_reason(status.failure if status.state is ServerState.FAILED else None)
        self.graphs_note.setVisible(status.state is ServerState.READY)
