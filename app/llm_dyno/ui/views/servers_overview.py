"""The servers overview: every running server at a glance, one double click to its dashboard.

Rows come from the registry the window and the CLI share (``bridge.manager.live()``: every engine and
host the profiles name, launched here, from the CLI or before a restart) plus the server attached in
the dashboard, if any. While the overview is shown, each ready server's ``/metrics`` is sampled (the
dashboard's :class:`MetricsSampler`, at 1 Hz) for its generation rate, and its GPUs are read through
the job layer's reader (:func:`plan_gpus` / :func:`gpu_reader`) for their power. Samplers run on
their own threads and only while the overview is visible; the table is redrawn from their latest
values by a GUI timer, so a slow or dead server never blocks the window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.jobs.endpoint import attached_endpoint
from llm_dyno.core.jobs.server_watch import ServerWatch, watch_handle
from llm_dyno.core.runtime.base import ServerHandle, ServerState
from llm_dyno.core.runtime.idle import idle_text, shown_state
from llm_dyno.core.telemetry.attach import AttachedServer
from llm_dyno.ui.servers import ServerBridge
from llm_dyno.ui.views.sleep_controls import SleepControls

REFRESH_MS = 1000
SAMPLE_S = 1.0
COLUMNS = ("Profile", "Engine", "Host", "State", "Gen tok/s", "GPU power", "URL")


@dataclass(frozen=True)
class OverviewRow:
    """One server as the overview shows it."""

    key: str  # "profile:NAME" or "attached:URL"
    profile: str  # the profile it came from ("" for an attached server)
    engine: str  # process, docker or attached
    host: str  # this machine, a Docker host, or the URL's host
    state: str
    url: str
    ready: bool
    gpu_label: str = ""


def rows_of(handles: list[ServerHandle], attached: AttachedServer | None) -> list[OverviewRow]:
    """The overview's rows: the registry's live servers, then the attached one."""
    from llm_dyno.core.jobs.gpus import plan_gpus

    rows = []
    for h in sorted(handles, key=lambda h: h.profile_name):
        plan = h.plan
        docker = plan.profile.docker if plan.runtime == "docker" else None
        host = (docker.host if docker is not None else None) or "this machine"
        rows.append(
            OverviewRow(
                key=f"profile:{h.profile_name}",
                profile=h.profile_name,
                engine=plan.runtime,
                host=host,
                state=shown_state(h),
                url=plan.base_url,
                ready=h.status.state is ServerState.READY,
                gpu_label=plan_gpus(plan).label,
            )
        )
    if attached is not None:
        host = attached.url.split("://", 1)[-1].split("/", 1)[0]
        rows.append(
            OverviewRow(f"attached:{attached.url}", "", "attached", host, "attached", attached.url, True)
        )
    return rows


class ServersOverview(QWidget):
    """Every running server: state, generation rate, GPU power, profile; double click → dashboard."""

    openRequested = Signal(str)  # profile name ("" for the attached server)

    def __init__(
        self, bridge: ServerBridge, attached: Callable[[], AttachedServer | None] | None = None
    ) -> None:
        super().__init__()
        self.bridge = bridge
        self._attached = attached or (lambda: None)
        self.watches: dict[str, ServerWatch] = {}
        self.rows: list[OverviewRow] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        head = QHBoxLayout()
        title = QLabel("Running servers")
        title.setObjectName("sectionTitle")
        head.addWidget(title)
        self.summary = QLabel()
        self.summary.setObjectName("sectionSubtitle")
        head.addWidget(self.summary, 1)
        self.open_button = QPushButton("Open dashboard")
        self.open_button.clicked.connect(self.open_selected)
        head.addWidget(self.open_button)
        layout.addLayout(head)
        self.sleep_controls = SleepControls(self.selected_handle)  # vLLM sleep mode (sleep_controls.py)
        layout.addWidget(self.sleep_controls)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(lambda row, _col: self._open_row(row))
        layout.addWidget(self.table, 1)
        self.empty = QLabel("No server is running. Launch a profile, or attach to a server from the toolbar.")
        self.empty.setObjectName("sectionSubtitle")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.empty, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

    # ---- sampling only while shown -------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.bridge.adopt()  # a fresh look at the registry, in the bridge's worker
        self.refresh()
        self._timer.start()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._timer.stop()
        self.stop_watching()

    def stop_watching(self) -> None:
        """Stop every sampler (the overview is hidden or closing)."""
        for watch in self.watches.values():
            watch.stop()
        self.watches.clear()

    # ---- rows ----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the registry's live servers (no I/O: the bridge's worker keeps it current), start or
        stop samplers to match, and redraw the table from their latest figures."""
        handles = {h.profile_name: h for h in self.bridge.manager.live()}
        attached = self._attached()
        self.rows = rows_of(list(handles.values()), attached)
        wanted = {r.key for r in self.rows if r.ready}
        for key in [k for k in self.watches if k not in wanted]:
            self.watches.pop(key).stop()
        for row in self.rows:
            if row.ready and row.key not in self.watches:
                self.watches[row.key] = self._watch(row, handles.get(row.profile), attached)
        self._draw()

    def _watch(
        self, row: OverviewRow, handle: ServerHandle | None, attached: AttachedServer | None
    ) -> ServerWatch:
        if handle is None:  # the attached server: its key comes from the variable it names
            endpoint = attached_endpoint(attached) if attached is not None else url_endpoint(row.url, "")
            return ServerWatch(endpoint, None, interval_s=SAMPLE_S)
        return watch_handle(handle, interval_s=SAMPLE_S)

    def _draw(self) -> None:
        self.table.setRowCount(len(self.rows))
        total_tps = 0.0
        for i, row in enumerate(self.rows):
            watch = self.watches.get(row.key)
            tps, reachable, power = watch.figures() if watch is not None else (None, None, None)
            state = row.state if reachable is not False else f"{row.state} · not answering"
            state = " · ".join(x for x in (state, self._idle_text(row)) if x)
            total_tps += tps or 0.0
            label = row.gpu_label if row.gpu_label != "no GPU" else ""
            gpu = " · ".join(x for x in (f"{power:.0f} W" if power is not None else "", label) if x) or "—"
            cells = (
                row.profile or "(attached)",
                row.engine,
                row.host,
                state,
                f"{tps:.1f}" if tps is not None else "—",
                gpu,
                row.url,
            )
            for col, text in enumerate(cells):
                item = self.table.item(i, col)
                if item is None:
                    item = QTableWidgetItem()
                    self.table.setItem(i, col, item)
                item.setText(text)
                if col in (4, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.table.setVisible(bool(self.rows))
        self.empty.setVisible(not self.rows)
        self.open_button.setEnabled(bool(self.rows))
        self.sleep_controls.update_for(self.selected_handle())
        ready = sum(r.ready for r in self.rows)
        self.summary.setText(f"  {len(self.rows)} running · {ready} ready · {total_tps:.1f} tok/s in all")

    def selected_handle(self) -> ServerHandle | None:
        """The registry server of the selected row (the first row when none is selected)."""
        picked = max(self.table.currentRow(), 0)
        row = self.rows[picked] if picked < len(self.rows) else None
        return self.bridge.handle(row.profile) if row is not None and row.profile else None

    def _idle_text(self, row: OverviewRow) -> str:
        """The idle countdown: the window's own timer's, else one a headless ``llm-dyno idle`` writes."""
        timers = self.bridge.idle_timers
        own = timers.text(row.profile) if timers is not None and row.profile else ""
        handle = self.bridge.handle(row.profile) if row.profile and not own else None
        return own or (idle_text(handle) if handle is not None else "")

    # ---- opening a dashboard -------------------------------------------------------------------
    def open_selected(self) -> None:
        """Open the selected row's dashboard (the first row when none is selected)."""
        picked = self.table.currentRow()
        self._open_row(picked if picked >= 0 else 0)

    def _open_row(self, index: int) -> None:
        if 0 <= index < len(self.rows):
            self.openRequested.emit(self.rows[index].profile)
