"""The "Will it fit?" card of the profile form: the plan's memory estimate with its parts, live."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from llm_dyno.core.runtime.memory_report import MemoryEstimate, fmt_bytes
from llm_dyno.ui import theme


class MemoryFitPanel(QFrame):
    """Shows a :class:`MemoryEstimate`: the verdict, then weights, reserves, KV cache and tokens."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("formSection")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 14, 18, 16)
        layout.setSpacing(6)
        title = QLabel("Will it fit?")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        sub = QLabel(
            "Memory estimate from the model folder's config.json and safetensors, the engine flags above "
            "and this machine's GPU (or the datasheet figure). Activation and CUDA-graph reserves are "
            "approximate; vLLM's own figure appears once the server starts."
        )
        sub.setObjectName("sectionSubtitle")
        sub.setWordWrap(True)
        layout.addWidget(sub)
        self.headline = QLabel()
        self.headline.setObjectName("memoryHeadline")
        self.headline.setWordWrap(True)
        layout.addWidget(self.headline)
        self.details = QLabel()
        self.details.setObjectName("memoryDetails")
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.details)
        self.estimate: MemoryEstimate | None = None
        self.show_estimate(None)

    def show_estimate(self, estimate: MemoryEstimate | None) -> None:
        """Show ``estimate`` (None: the draft has no valid profile yet)."""
        self.estimate = estimate
        c = theme.colors()
        if estimate is None:
            self.headline.setText("No estimate: fix the profile first.")
            self.headline.setStyleSheet(f"color: {c.muted};")
            self.details.setText("")
            return
        color = {"fits": c.green, "will not fit": c.red}.get(estimate.verdict, c.muted)
        mark = {"fits": "✓", "will not fit": "✕"}.get(estimate.verdict, "?")
        self.headline.setText(f"{mark} {estimate.summary()}")
        self.headline.setStyleSheet(f"color: {color}; font-weight: 600;")
        if estimate.problem:
            self.details.setText("")
            return
        rows = []
        if estimate.gpu_total_bytes is not None:
            rows.append(
                (
                    estimate.gpu_name or "GPU",
                    fmt_bytes(estimate.usable_bytes),
                    f"{fmt_bytes(estimate.gpu_total_bytes)} × {estimate.gpu_memory_utilization:g} "
                    f"({estimate.gpu_total_source})",
                )
            )
        rows += [(p.name, fmt_bytes(p.bytes), p.source) for p in estimate.parts]
        sources = dict(estimate.sources)
        rows.append(
            ("KV per token", fmt_bytes(estimate.kv_bytes_per_token), sources.get("kv_bytes_per_token", ""))
        )
        if estimate.kv_cache_tokens is not None:
            conc = estimate.concurrency
            rows.append(
                (
                    "KV tokens",
                    f"{estimate.kv_cache_tokens:,}",
                    f"{conc:.2f} requests of {estimate.max_model_len:,} tokens at once"
                    if conc is not None and estimate.max_model_len
                    else "",
                )
            )
        cells = "".join(
            f"<tr><td style='padding-right:12px'><b>{escape(a)}</b></td>"
            f"<td align='right' style='padding-right:12px'>{escape(b)}</td>"
            f"<td style='color:{c.muted}'>{escape(s)}</td></tr>"
            for a, b, s in rows
        )
        notes = "".join(f"<br><span style='color:{c.muted}'>{escape(n)}</span>" for n in estimate.notes)
        warn = "".join(f"<br><span style='color:{c.red}'>⚠ {escape(w)}</span>" for w in estimate.warnings)
        self.details.setText(f"<table>{cells}</table>{warn}{notes}")
