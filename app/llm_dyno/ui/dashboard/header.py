"""The strip of big numbers above the plots: the latest figures of the watched server.

The live metrics with a header caption (:data:`~llm_dyno.core.telemetry.live_metrics.LIVE_METRICS`)
come first, keyed by their series key; then the GPU figures with a caption
(:data:`~llm_dyno.core.telemetry.live_metrics.GPU_METRICS`), keyed by their figure, and the Roofline figure.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.live_metrics import GpuMetric, LiveMetric
from llm_dyno.ui import theme

ROOFLINE = ("roofline", "Roofline")  # the figure that is no registry's: the view computes it


def gpu_figures() -> tuple[GpuMetric, ...]:
    """The GPU metrics with a figure in the strip, in registry order."""
    return tuple(m for m in live_metrics.GPU_METRICS if m.header is not None)


def figures(metrics: tuple[LiveMetric, ...] | None = None) -> tuple[tuple[str, str], ...]:
    """Every figure of the strip, in order: (key, caption); ``metrics`` by default the registry's."""
    chosen = live_metrics.LIVE_METRICS if metrics is None else metrics
    return (
        *((m.key, m.header) for m in chosen if m.header is not None),
        *((g.figure, g.header) for g in gpu_figures() if g.header is not None),
        ROOFLINE,
    )


class HeaderStrip(QFrame):
    """The figures; ``set_values`` takes the latest value of each series by name."""

    def __init__(self, parent: QWidget | None = None, metrics: tuple[LiveMetric, ...] | None = None) -> None:
        super().__init__(parent)
        chosen = live_metrics.LIVE_METRICS if metrics is None else metrics
        self.metrics = tuple(m for m in chosen if m.header is not None)
        self.gpu_metrics = gpu_figures()
        self.setObjectName("dashboardHeader")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(8)
        self.values: dict[str, QLabel] = {}
        self.captions: dict[str, QLabel] = {}
        c = theme.colors()
        for key, caption in figures(self.metrics):
            card = QFrame()
            card.setObjectName("figureCard")
            card.setStyleSheet(
                f"#figureCard {{ background: {c.base}; border: 1px solid {c.border}; border-radius: 6px; }}"
            )
            col = QVBoxLayout(card)
            col.setContentsMargins(12, 6, 12, 6)
            col.setSpacing(0)
            cap = QLabel(caption)
            cap.setStyleSheet(f"color: {c.muted}; font-size: 11px; border: none;")
            val = QLabel("—")
            val.setObjectName(f"figure_{key}")
            val.setStyleSheet(f"color: {c.text}; font-size: 22px; font-weight: 600; border: none;")
            val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            col.addWidget(cap)
            col.addWidget(val)
            row.addWidget(card, 1)
            self.values[key] = val
            self.captions[key] = cap

    def set_roofline(self, text: str, tooltip: str) -> None:
        """Show the achieved share of the decode ceiling (or "n/a" with what is missing)."""
        label = self.values["roofline"]
        if label.text() != text:
            label.setText(text)
        if label.toolTip() != tooltip:
            label.setToolTip(tooltip)

    def set_gpu_scope(self, label: str | None, count: int = 1) -> None:
        """Name the watched GPUs on the GPU figures (``label`` e.g. ``GPU 1+2``; None: no GPU).

        With several GPUs the tooltips say how they are combined (the plots use the same numbers).
        """
        for m in self.gpu_metrics:
            key, caption = m.figure, m.header or ""
            tip = f"{label}: {m.combined.format(count=count)}" if count > 1 else ""
            self.captions[key].setText(f"{caption} · {label}" if label else caption)
            for widget in (self.captions[key], self.values[key]):
                widget.setToolTip(tip)

    def set_gpu_figures_visible(self, visible: bool) -> None:
        """Show or hide the GPU figures (power and temperature) of a server that uses no GPU."""
        for m in self.gpu_metrics:
            card = self.values[m.figure].parentWidget()
            if card is not None:
                card.setVisible(visible)

    def set_spec_decode_figures_visible(self, visible: bool) -> None:
        """Show or hide the figures only speculative decoding fills (acceptance, mean length)."""
        for m in self.metrics:
            card = self.values[m.key].parentWidget()
            if m.spec_decode and card is not None:
                card.setVisible(visible)

    def text(self, key: str) -> str:
        """The shown text of a figure (for tests)."""
        return self.values[key].text()

    def set_values(self, latest: dict[str, float | None]) -> None:
        """Update every figure from the latest series values (missing ones show a dash)."""
        g = latest.get
        texts = {m.key: m.header_text(g(m.key)) for m in self.metrics}
        for gm in self.gpu_metrics:
            texts[gm.figure] = gm.header_text(g(gm.key), g(gm.limit) if gm.limit is not None else None)
        for key, text in texts.items():
            if self.values[key].text() != text:
                self.values[key].setText(text)
