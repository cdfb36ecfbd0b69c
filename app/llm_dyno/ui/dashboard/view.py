"""The live dashboard of one server: big numbers, X-linked time plots, events, power limit, export.

Samples arrive as queued signals (see :mod:`.feed`) and go into a :class:`SeriesSet`; the plots are
redrawn by a timer (``REDRAW_MS``) only while the dashboard is visible and not paused, and curve data
is only re-set when new samples came in. Times on the plots are Unix seconds (DateAxisItem).
"""

from __future__ import annotations

import time
from datetime import datetime
from functools import partial
from pathlib import Path

import numpy as np
from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.exports.registry import RESULT_EXPORTS, ResultKind, formats_for, write_result
from llm_dyno.core.exports.series import SeriesWindow
from llm_dyno.core.runtime.gpu_source import NO_GPU_INDEX_REASON, GpuSource
from llm_dyno.core.runtime.logformats import parse_warning
from llm_dyno.core.telemetry.live_metrics import POSITION_PLOT, position_of
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.nvml import GpuSample, nvml
from llm_dyno.core.telemetry.series import SeriesSet
from llm_dyno.ui.dashboard.feed import (
    TelemetryFeed,
    gpu_values,
    metrics_values,
    wall_time,
)
from llm_dyno.ui.dashboard.header import HeaderStrip
from llm_dyno.ui.dashboard.plot_specs import position_curve
from llm_dyno.ui.dashboard.plots import PlotGrid
from llm_dyno.ui.dashboard.power_control import PowerLimitControl
from llm_dyno.ui.dashboard.readout import readout_text
from llm_dyno.ui.dashboard.roofline import RooflineInputs
from llm_dyno.ui.dialogs.settings_dialog import load_settings
from llm_dyno.ui.messages import window_message

REDRAW_MS = 100
WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("1 min", 60.0), ("5 min", 300.0), ("15 min", 900.0), ("1 h", 3600.0), ("All", None),
)  # fmt: skip
MAX_EVENTS = 500
NO_SPEC_DECODE = "No speculative decoding in this profile: acceptance is not measured."


class Dashboard(QWidget):
    """Live plots of one server (launched or attached); ``watch`` starts the samplers."""

    eventAdded = Signal(float, str, str)
    detachRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series = SeriesSet()
        self.feed = TelemetryFeed(self)
        self.feed.metricsSampled.connect(self.feed_metrics)
        self.feed.gpuSampled.connect(self.feed_gpu)
        self.events: list[tuple[float, str, str]] = []
        self.url = ""
        self.profile_name: str | None = None
        self.live = False
        self.paused = False
        self.follow = True
        self.window_s: float | None = 300.0
        self._dirty = True
        self._figures_for: float | None = None  # the newest sample time the header shows
        self._gpu_seen = False
        self.gpu_source: GpuSource | None = None  # what watch() reads
        self.roofline = RooflineInputs()  # model size and GPU survive clear(): same server, new samples

        col = QVBoxLayout(self)
        col.setContentsMargins(16, 12, 16, 12)
        col.setSpacing(8)
        top = QHBoxLayout()
        self.title = QLabel("No server")
        self.title.setObjectName("sectionTitle")
        self.state = QLabel()
        self.state.setObjectName("sectionSubtitle")
        top.addWidget(self.title)
        top.addWidget(self.state, 1)
        self.detach_button = QPushButton("Detach")
        self.detach_button.setToolTip("Stop watching this attached server")
        self.detach_button.clicked.connect(self.detachRequested)
        self.detach_button.hide()
        top.addWidget(self.detach_button)
        col.addLayout(top)
        self.header = HeaderStrip()
        col.addWidget(self.header)
        self._update_roofline()

        bar = QHBoxLayout()
        bar.setSpacing(6)
        self.window_box = QComboBox()
        for label, _s in WINDOWS:
            self.window_box.addItem(label)
        self.window_box.setCurrentIndex(1)
        self.window_box.currentIndexChanged.connect(lambda i: self.set_window(WINDOWS[i][0]))
        self.pause_button = QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.pause_button.toggled.connect(self.set_paused)
        self.follow_button = QPushButton("Follow")
        self.follow_button.setCheckable(True)
        self.follow_button.setChecked(True)
        self.follow_button.toggled.connect(self.set_follow)
        self.png_button = QPushButton("PNG…")
        self.png_button.setToolTip("Save the plots as shown to a PNG image")
        self.png_button.clicked.connect(lambda: self._ask_export("png"))
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Save the visible time range of every shown series to a file")
        menu = QMenu(self.export_button)
        self.export_actions = {
            name: menu.addAction(f"{fmt.title}…", partial(self._ask_export, name))
            for name, fmt in formats_for(ResultKind.DASHBOARD).items()
        }
        self.export_button.setMenu(menu)
        self.readout = QLabel("Move the mouse over a plot to read every curve at that time")
        self.readout.setObjectName("sectionSubtitle")
        self.readout.setMinimumWidth(100)
        bar.addWidget(QLabel("Window"))
        for w in (
            self.window_box,
            self.pause_button,
            self.follow_button,
            self.png_button,
            self.export_button,
        ):
            bar.addWidget(w)
        bar.addSpacing(8)
        bar.addWidget(self.readout, 1)
        col.addLayout(bar)

        self.gpu_notice = QLabel()
        self.gpu_notice.setObjectName("sectionSubtitle")
        self.gpu_notice.setWordWrap(True)
        self.gpu_notice.hide()
        col.addWidget(self.gpu_notice)
        self.spec_notice = QLabel(NO_SPEC_DECODE)  # a profile that drafts no tokens: no acceptance
        self.spec_notice.setObjectName("sectionSubtitle")
        self.spec_notice.hide()
        col.addWidget(self.spec_notice)
        self.speculates: bool | None = None  # None: not known (an attached server)
        self.kv_note = QLabel()  # the memory estimate's KV capacity next to the one vLLM logged
        self.kv_note.setObjectName("sectionSubtitle")
        self.kv_note.hide()
        col.addWidget(self.kv_note)
        self.plots = PlotGrid()
        self.plots.cursorMoved.connect(self._cursor_moved)
        self.plots.rangeChangedByUser.connect(lambda: self.follow_button.setChecked(False))
        col.addWidget(self.plots, 1)
        self.power = PowerLimitControl()
        col.addWidget(self.power)

        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self._tick)
        self.pixel_throttle = True  # redraw only when a pixel would change (see _tick)
        self._data_at = 0.0
        self._right = 0.0

    # ---- watching ------------------------------------------------------------------------------
    def watch(
        self,
        endpoint: Endpoint,
        title: str,
        *,
        gpus: GpuSource | None = None,
        no_gpu_reason: str = NO_GPU_INDEX_REASON,
        metrics_interval_s: float | None = None,
    ) -> None:
        """Start sampling ``endpoint`` (with its key) and the GPUs of ``gpus`` (None: none, saying
        ``no_gpu_reason``) every ``metrics_interval_s`` seconds (None: the "Sampling interval" setting)."""
        url = endpoint.url
        if metrics_interval_s is None:
            metrics_interval_s = load_settings().sample_interval_s  # defaults when the file is broken
        if self.live and url == self.url:
            return
        self.clear()
        self.url, self.live, self.gpu_source = url, True, gpus
        self.profile_name = endpoint.profile_name  # whose sleep state the state line shows
        self.title.setText(title)
        self.state.setText(url)
        reason = no_gpu_reason if gpus is None else None if gpus.through_container else nvml().available()
        self.set_gpu_available(reason)
        # a server that uses no GPU has no power, temperature or limit to show: those figures and the
        # power control are hidden (the notice says why); a GPU without a driver keeps them, disabled
        self.header.set_gpu_figures_visible(gpus is not None)
        self.power.setVisible(gpus is not None)
        self.header.set_gpu_scope(gpus.label if gpus else None, len(gpus.server_gpus) if gpus else 0)
        self.plots.set_gpu_label(gpus.label if gpus else "")
        self.feed.start(endpoint, gpus=gpus if reason is None else None,
                        metrics_interval_s=metrics_interval_s)  # fmt: skip
        if gpus is not None and reason is None:
            if gpus.through_container:
                self.power.set_unavailable(f"GPUs read from {gpus.where}: set limits on their machine")
            else:
                self.power.refresh(gpus.server_gpus)

    def stop_watching(self) -> None:
        """Stop the samplers; the data stays on screen."""
        self.feed.stop()
        self.live = False

    def clear(self) -> None:
        """Forget every sample and event."""
        self.series = SeriesSet()
        self.events.clear()
        self.plots.clear_data()
        self._gpu_seen = False
        self._dirty = True

    def set_speculates(self, speculates: bool | None) -> None:
        """Whether the watched server drafts tokens: False hides the acceptance plots and figures
        (one line says why) instead of leaving them at "No data yet"; True or None (not known) shows
        them, waiting for data."""
        self.speculates = speculates
        shown = speculates is not False
        self.plots.set_spec_decode_visible(shown)
        self.header.set_spec_decode_figures_visible(shown)
        self.spec_notice.setVisible(not shown)

    def set_gpu_available(self, reason: str | None) -> None:
        """Show the GPU plots and the power control, or hide them and say why (``reason``)."""
        self.plots.set_gpu_visible(reason is None)
        self.gpu_notice.setVisible(reason is not None)
        if reason is not None:
            self.gpu_notice.setText(f"GPU plots hidden: {reason}")
            self.power.set_unavailable(reason)

    def _sleep_text(self) -> str:
        """``sleeping (level 1)`` while this app has the watched profile's server asleep."""
        from llm_dyno.core.runtime.sleep import record_at

        record = record_at(self.profile_name, self.url) if self.profile_name else None
        return (record.state or "") if record is not None else ""

    # ---- samples (GUI thread) ------------------------------------------------------------------
    def feed_metrics(self, sample: MetricsSample, t: float | None = None) -> None:
        """Take one metrics sample (``t``: its Unix time; default from its monotonic time)."""
        ts = wall_time(sample.taken_at) if t is None else t
        if not sample.reachable:
            self.state.setText(f"{self.url} · not answering: {sample.error}")
            return
        self.state.setText(" · ".join(x for x in (self.url, self._sleep_text()) if x))
        values = metrics_values(sample)
        for name in values:
            position = position_of(name)
            if position is not None and name not in self.plots.curves:
                self.plots.add_curve(POSITION_PLOT, position_curve(position))
        if self.speculates is False and values.get("acceptance_pct") is not None:
            self.set_speculates(True)  # it drafts after all (e.g. a flag the profile does not show)
        self.series.append_many(ts, values)
        self._dirty = True

    def feed_gpu(self, sample: GpuSample, t: float | None = None) -> None:
        """Take one GPU sample (``t``: its Unix time; default from its monotonic time)."""
        if sample.error is not None or not sample.readings:
            if not self._gpu_seen:
                self.set_gpu_available(sample.error or "no GPU reading")
            return
        if not self._gpu_seen:
            self._gpu_seen = True
            self.set_gpu_available(None)
        ts = wall_time(sample.taken_at) if t is None else t
        self.series.append_many(ts, gpu_values(sample.readings))
        self.roofline.feed_reading(sample.readings[0])
        self._dirty = True

    def feed_log_lines(self, lines: list[str]) -> None:
        """Turn WARNING/ERROR log lines into event markers; take the model size for the Roofline figure."""
        self.set_log_lines(lines)
        for line in lines:
            w = parse_warning(line)
            if w is not None:
                self.add_event(time.time(), "warning" if w.level == "WARNING" else "error", w.message)

    def set_log_lines(self, lines: list[str]) -> None:
        """Read the Roofline figure's inputs from server log lines, e.g. the backlog: the model size
        (``Model loading took X GiB``), the speculative setting and the SpecDecoding lines."""
        before = (
            self.roofline.weights_bytes,
            self.roofline.speculative_tokens,
            len(self.roofline.spec_lines),
        )
        self.roofline.feed_lines(lines)
        after = (self.roofline.weights_bytes, self.roofline.speculative_tokens, len(self.roofline.spec_lines))
        if after != before or any("SpecDecoding metrics" in line for line in lines):
            self._update_roofline()

    def set_gpu_name(self, name: str | None) -> None:
        """The GPU's name where NVML cannot see it (an attached remote server): for the Roofline figure."""
        self.roofline.gpu_name = name or self.roofline.gpu_name
        self._update_roofline()

    def _latest(self, name: str) -> float | None:
        x = self.series.series(name).latest() if name in self.series else None
        return x[1] if x is not None else None

    def _update_roofline(self) -> None:
        self.header.set_roofline(
            *self.roofline.figure(
                self._latest("gen_tps"), self._latest("mean_acceptance_length"), self._latest("running"),
                self._latest("read_bytes_per_s"),
            )
        )  # fmt: skip

    def add_event(self, ts: float, kind: str, text: str) -> None:
        """Mark an event (``kind``: warning, error, launch, benchmark, …) at Unix time ``ts``."""
        self.events.append((ts, kind, text))
        self.plots.add_marker(ts, kind, text)
        if len(self.events) > MAX_EVENTS:
            cut = self.events[len(self.events) - MAX_EVENTS][0]
            self.events = [e for e in self.events if e[0] >= cut]
            self.plots.drop_markers_before(cut)
        self.eventAdded.emit(ts, kind, text)

    # ---- view controls -------------------------------------------------------------------------
    def set_window(self, label: str) -> None:
        """Show the last 1 min / 5 min / 15 min / 1 h, or All; turns following on."""
        labels = [w[0] for w in WINDOWS]
        i = labels.index(label)
        self.window_s = WINDOWS[i][1]
        if self.window_box.currentIndex() != i:
            self.window_box.setCurrentIndex(i)
        self._dirty = True
        self.follow_button.setChecked(True)
        self.redraw()

    def set_paused(self, paused: bool) -> None:
        """Freeze the plots (samples keep coming in and show on resume)."""
        self.paused = paused
        if self.pause_button.isChecked() != paused:
            self.pause_button.setChecked(paused)
        self.pause_button.setText("Resume" if paused else "Pause")
        if not paused:
            self.redraw()

    def set_follow(self, follow: bool) -> None:
        """Keep the newest samples in view (off after the user pans)."""
        self.follow = follow
        if self.follow_button.isChecked() != follow:
            self.follow_button.setChecked(follow)
        self._dirty = True
        if follow:
            self.redraw()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.timer.start()
        self.redraw()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self.timer.stop()

    # ---- drawing -------------------------------------------------------------------------------
    def latest_t(self) -> float | None:
        """The newest sample time over every series."""
        times = [x[0] for s in self.series if (x := s.latest()) is not None]
        return max(times) if times else None

    def _data(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        s = self.series.series(name)
        window = self.window_s if self.follow else None
        t, v = s.recent(None if window is None else window * 1.05 + 2)
        if window is None and len(t):
            coarse = s.decimated()
            older = coarse.t < t[0]
            if older.any():
                t, v = np.concatenate((coarse.t[older], t)), np.concatenate((coarse.mean[older], v))
        return t, v

    def seconds_per_pixel(self) -> float:
        """How much time one pixel of the plots spans at the current zoom."""
        lo, hi = self.plots.x_range()
        width = self.plots.master.getViewBox().width() if self.plots.master is not None else 0
        return (hi - lo) / width if width > 0 and hi > lo else 0.0

    def _tick(self) -> None:
        """The timer: redraw at most every REDRAW_MS, and only when a pixel would change.

        With 1 h in view one pixel spans several seconds, so new samples (and the scrolling of the
        time axis) are held back until they would move something by a whole pixel.
        """
        if self.paused:
            return
        step = self.seconds_per_pixel() if self.pixel_throttle else 0.0
        now = time.monotonic()
        if self._dirty and now - self._data_at >= step:
            self.redraw()
            return
        if self._dirty and self.latest_t() != self._figures_for:
            self._update_figures()  # the header stays live while the plots wait for a pixel
        if self.follow and (not step or abs(self._right_edge() - self._right) >= step):
            self._follow()

    def redraw(self) -> None:
        """Re-set curve data when samples came in, move the time window, update the figures."""
        if self.paused:
            return
        if self._dirty:
            self._dirty = False
            self._data_at = time.monotonic()
            appended = self.follow and self.window_s is not None  # the data only grows at the end
            for name in self.plots.visible_series():
                if name in self.series:
                    self.plots.set_curve_data(name, *self._data(name), appended=appended)
            self._update_figures()
        if self.follow:
            self._follow()
        self.plots.refresh()  # decimate what changed, once, for the final time range

    def _update_figures(self) -> None:
        """The header strip and the roofline share from the newest samples."""
        self.header.set_values({n: (x[1] if (x := self.series.series(n).latest()) else None)
                                for n in self.series.names()})  # fmt: skip
        self._update_roofline()
        self._figures_for = self.latest_t()

    def _right_edge(self) -> float:
        last = self.latest_t()
        if last is None:
            return self._right
        return max(last, time.time()) if self.live else last

    def _follow(self) -> None:
        if self.latest_t() is None:
            return
        right = self._right = self._right_edge()
        if self.window_s is None:
            first = min((t[0] for n in self.plots.visible_series() if len(t := self.plots.curve_data(n)[0])),
                        default=right - 60)  # fmt: skip
            self.plots.set_x_range(first, max(right, first + 10))
        else:
            self.plots.set_x_range(right - self.window_s, right, snap=True)

    # ---- crosshair -----------------------------------------------------------------------------
    def _cursor_moved(self, ts: float) -> None:
        self.readout.setText(self.readout_at(ts))

    def readout_at(self, ts: float) -> str:
        """Every visible curve's value at time ``ts`` (nearest sample), and events near it."""
        return readout_text(self.plots, self.events, ts)

    # ---- export --------------------------------------------------------------------------------
    def export_png(self, path: Path) -> bool:
        """Save the plots as shown."""
        return bool(self.plots.grab().save(str(path)))

    def export(self, name: str, path: Path) -> int:
        """Save every visible series within the visible time range in the registered format ``name``
        (see :mod:`llm_dyno.core.exports.registry`); returns the row count."""
        t0, t1 = self.plots.x_range()
        cols = {n: self.plots.curve_data(n) for n in self.plots.visible_series() if n in self.series}
        shown = SeriesWindow(cols, t0, t1)
        write_result(path, name, shown)
        return len(shown.rows())

    def _ask_export(self, name: str) -> None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        if name == "png":
            suffix, filters = ".png", "PNG image (*.png)"
        else:
            fmt = RESULT_EXPORTS[name]
            suffix, filters = fmt.suffix, fmt.file_filter()
        chosen, _ = QFileDialog.getSaveFileName(self, "Export", f"dashboard-{stamp}{suffix}", filters)
        if not chosen:
            return
        try:
            if name == "png":
                self.export_png(Path(chosen))
            else:
                self.export(name, Path(chosen))
        except DynoError as exc:
            self.readout.setText(f"Export failed: {window_message(exc)}")
