"""ReadinessProbe before a server answers (connection refused), and secret references.

Readiness against a real server (with an API key) is covered by test_process_backend.py.
"""

from __future__ import annotations

import threading
import time

from llm_dyno.core.runtime.readiness import ReadinessProbe
from tests.support.vllm_env import free_port


def test_times_out_while_nothing_listens() -> None:
    started = time.monotonic()
    result = ReadinessProbe(f"http://127.0.0.1:{free_port()}").wait(timeout_s=0.5)
    assert not result.ready and result.health_ok_at is None
    assert "Connect" in result.error
    assert time.monotonic() - started < 1.5


def test_cancel_from_another_thread_returns_promptly() -> None:
    probe = ReadinessProbe(f"http://127.0.0.1:{free_port()}", interval_s=5)  # capped at 0.1 s
    assert probe.interval_s == 0.1
    threading.Timer(0.2, probe.cancel).start()
    started = time.monotonic()
    result = probe.wait()
    assert not result.ready and result.error == "cancelled"
    assert time.monotonic() - started < 1.0
