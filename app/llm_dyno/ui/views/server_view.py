"""The Dashboard view: the selected profile's server (launch progress, failure, live dashboard),
an attached server's live dashboard, or an invitation to launch.

One :class:`Dashboard` per watched server is kept (keyed by profile or attached URL), so switching
profiles does not lose the history of a server that keeps running.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QStackedWidget, QVBoxLayout, QWidget

from llm_dyno.core.bench.roofline import weights_bytes_from_log
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.jobs.endpoint import attached_endpoint
from llm_dyno.core.runtime.base import LaunchPlan, ServerState, ServerStatus
from llm_dyno.core.runtime.gpu_source import attached_gpu_source, plan_gpu_source
from llm_dyno.core.runtime.memory import logged_kv_tokens
from llm_dyno.core.runtime.memory_report import KvComparison
from llm_dyno.core.telemetry.attach import AttachedServer
from llm_dyno.core.telemetry.nvml import nvml
from llm_dyno.ui.dialogs.attach_dialog import AttachDialog
from llm_dyno.ui.views.failure_panel import FailurePanel
from llm_dyno.ui.views.launch_panel import LaunchPanel
from llm_dyno.ui.widgets.empty_state import EmptyState

if TYPE_CHECKING:
    from llm_dyno.ui.dashboard import Dashboard


# the core's reason names the YAML key; the window names its own field
NO_GPU_IN_WINDOW = "the profile requests no GPU (fill in GPUs in the Profile tab to watch one)"


class ServerView(QWidget):
    """Idle: an invitation to launch. Otherwise the launch panel, and the failure panel when it died."""

    launchRequested = Signal()
    attachedChanged = Signal(object)  # AttachedServer | None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.stack = QStackedWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)
        self.idle = EmptyState(
            "dashboard",
            "Not running",
            "Launch this profile to watch it come up: pulling the image, loading weights, compiling, "
            "capturing graphs, ready (each step it takes).",
            [
                "Live graphs: tokens/s, KV cache, and where measured acceptance and GPU power",
                "If it fails, the reason, what to do, and the log lines that show it",
            ],
        )
        self.launch_button = self.idle.add_action("Launch", primary=True)
        self.launch_button.clicked.connect(self.launchRequested)
        self.attach_button = self.idle.add_action("Attach to server…")
        self.attach_button.clicked.connect(self.ask_attach)
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
        self.attached: AttachedServer | None = None
        self._model_bytes: dict[str, float] = {}  # per profile, from "Model loading took X GiB"
        self._kv_logged: dict[str, int] = {}  # per profile, from "GPU/CPU KV cache size: N tokens"
        self._plans: dict[str, LaunchPlan] = {}  # per profile, the plan it was launched with (its estimate)
        self.dashboards: dict[str, Dashboard] = {}
        self._launched_at: dict[str, float] = {}

    def show_idle(self, profile: str | None, can_launch: bool = True) -> None:
        """No server for this profile."""
        self.profile = profile
        self.launch_button.setEnabled(can_launch and profile is not None)
        self.idle.title.setText("Not running" if profile else "No profile selected")
        if profile is not None and f"profile:{profile}" in self.dashboards:
            self.dashboards[f"profile:{profile}"].stop_watching()
        if self.attached is not None:
            self.stack.setCurrentWidget(self._attached_dashboard(self.attached))
            return
        self.stack.setCurrentWidget(self.idle)

    def start(self, profile: str, url: str, runtime: str = "docker") -> None:
        """A launch of ``profile`` begins."""
        self.profile = profile
        self.launch_panel.set_runtime(runtime)
        self.launch_panel.start(url)
        self.failure_panel.set_reason(None)
        self._kv_logged.pop(profile, None)  # a new launch logs its own capacity
        self.launch_panel.set_kv_comparison(None)
        self._launched_at[profile] = time.time()
        self.stack.setCurrentWidget(self._scroll)

    def set_status(
        self,
        profile: str,
        status: ServerStatus,
        url: str = "",
        runtime: str | None = None,
        plan: LaunchPlan | None = None,
    ) -> None:
        """Show the status of ``profile``'s server (``plan``: what runs, for the GPUs to watch)."""
        self.profile = profile
        if runtime:
            self.launch_panel.set_runtime(runtime, plan.profile.args if plan is not None else ())
        current = self.stack.currentWidget()
        keep_dash = self._is_dashboard(current) and status.state is ServerState.READY
        if (current is not self._scroll and not keep_dash) or self.launch_panel.status is None:
            self.launch_panel.start(url, started_at=status.since if status.state.is_loading else None)
            self.stack.setCurrentWidget(self._scroll)
        if url:
            self.launch_panel.url.setText(url)
        self.launch_panel.set_status(status)
        if plan is not None:
            self.launch_panel.set_warnings(plan.warnings)
            self.launch_panel.set_budget(plan.budget.summary() if plan.budget is not None else ())
            self._plans[profile] = plan
        self._show_kv(profile)
        self.failure_panel.set_reason(status.failure if status.state is ServerState.FAILED else None)
        self.graphs_note.setVisible(False)
        key = f"profile:{profile}"
        if status.state is ServerState.READY and url:
            dash = self._dashboard(key)
            if not dash.live:
                gpus = plan_gpu_source(plan) if plan is not None else None
                endpoint = plan.endpoint if plan is not None else url_endpoint(url, "")
                dash.watch(
                    endpoint, profile, gpus=gpus, no_gpu_reason=NO_GPU_IN_WINDOW if plan else "no launch plan"
                )
                from llm_dyno.core.bench.ab import has_spec_config  # the benchmark client: not at start

                dash.set_speculates(has_spec_config(plan.profile) if plan is not None else None)
                dash.roofline.weights_bytes = self._model_bytes.get(profile, dash.roofline.weights_bytes)
                # one marker per launch, where it began, saying when it was ready
                now = time.time()
                began = self._launched_at.pop(profile, None)
                if began is not None:
                    dash.add_event(began, "launch", f"launch of {profile}, ready after {now - began:.0f} s")
                else:
                    dash.add_event(now, "launch", "ready")
            self._show_kv(profile)
            self.stack.setCurrentWidget(dash)
        elif key in self.dashboards and not status.state.is_live:
            self.dashboards[key].stop_watching()

    # ---- dashboards ----------------------------------------------------------------------------
    def _is_dashboard(self, widget: object) -> bool:
        """Whether ``widget`` is one of this view's dashboards (no import of pyqtgraph to ask)."""
        return any(widget is dash for dash in self.dashboards.values())

    def _dashboard(self, key: str) -> Dashboard:
        dash = self.dashboards.get(key)
        if dash is None:
            # pyqtgraph loads with the first dashboard, not at start (benchmarks/startup.py)
            from llm_dyno.ui.dashboard import Dashboard

            dash = self.dashboards[key] = Dashboard()
            self.stack.addWidget(dash)
        return dash

    def show_dashboard(self, key: str) -> Dashboard:
        """Show (creating it if new) the dashboard called ``key``, e.g. for recorded data."""
        dash = self._dashboard(key)
        self.stack.setCurrentWidget(dash)
        return dash

    def feed_log_lines(self, profile: str, lines: list[str]) -> None:
        """New log lines of a profile's server: warnings become event markers on its dashboard."""
        weights = weights_bytes_from_log(lines)  # the model size arrives before the dashboard exists
        if weights is not None:
            self._model_bytes[profile] = weights
        tokens = logged_kv_tokens(lines)
        if tokens is not None:
            self._kv_logged[profile] = tokens
            self._show_kv(profile)
        dash = self.dashboards.get(f"profile:{profile}")
        if dash is not None and dash.live:
            dash.feed_log_lines(lines)

    def _show_kv(self, profile: str) -> None:
        """The estimate's KV capacity beside vLLM's logged one, in the launch panel and the dashboard."""
        plan = self._plans.get(profile)
        if plan is None or plan.memory is None:
            return
        line = KvComparison(plan.memory.kv_cache_tokens, self._kv_logged.get(profile)).line()
        if profile == self.profile:
            self.launch_panel.set_kv_comparison(line)
        dash = self.dashboards.get(f"profile:{profile}")
        if dash is not None:
            dash.kv_note.setText(line)
            dash.kv_note.setVisible(True)

    def _attached_dashboard(self, server: AttachedServer) -> Dashboard:
        dash = self._dashboard(f"attached:{server.url}")
        if not dash.live:
            where = f" · container {server.container}" if server.container else ""
            title = f"Attached: {server.label}{where}"
            gpus = attached_gpu_source(server, nvml_reason=nvml().available() if server.container else None)
            dash.watch(attached_endpoint(server), title, gpus=gpus)
            dash.detach_button.show()
            dash.detachRequested.connect(lambda: self.watch_attached(None))
        return dash

    def watch_attached(self, server: AttachedServer | None) -> None:
        """Watch an attached server (shown when the selected profile has no server); None detaches."""
        if self.attached is not None and (server is None or server.url != self.attached.url):
            old = self.dashboards.get(f"attached:{self.attached.url}")
            if old is not None:
                old.stop_watching()
        self.attached = server
        if server is not None:
            self.stack.setCurrentWidget(self._attached_dashboard(server))
        elif self.stack.currentWidget() is not self._scroll:
            self.stack.setCurrentWidget(self.idle)
        self.attachedChanged.emit(server)

    def ask_attach(self) -> None:
        """Ask for a server to attach to (URL, container, GPU, API-key variable) and watch it."""
        dialog = AttachDialog(self)
        if dialog.exec() and dialog.server is not None:
            self.watch_attached(dialog.server)
