"""Telemetry commands: ``watch`` a server's live rates, ``power show | set | reset``."""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import sys
import time
from collections.abc import Callable
from typing import Any

from llm_dyno.commands.common import gpu_index, print_json, store, warn
from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.gpus import gpu_sampler
from llm_dyno.core.jobs.power_job import restore_limit, set_limits
from llm_dyno.core.jobs.watch_job import prepare_watch
from llm_dyno.core.telemetry import live_metrics
from llm_dyno.core.telemetry.attach import AttachedServer, load_attached, remember_attached
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample, MetricsSampler
from llm_dyno.core.telemetry.nvml import GpuReading, GpuSample, nvml
from llm_dyno.core.telemetry.power import read_power_limit
from llm_dyno.core.textsafe import whole_lines


def register(sub: Any) -> None:
    """Add ``watch`` and ``power`` to the CLI."""
    w = sub.add_parser("watch", help="live tokens/s, acceptance and KV use of a running server")
    target = w.add_mutually_exclusive_group(required=True)
    target.add_argument("name", nargs="?", help="profile name (host/port from its flags)")
    target.add_argument("--url", help="server base URL, e.g. http://127.0.0.1:8000 (remembered)")
    w.add_argument(
        "--interval", type=float, default=1.0, metavar="S",
        help="seconds between scrapes (rates cover a window of at least 5 s, as on the dashboard)",
    )  # fmt: skip
    w.add_argument("--json", action="store_true", help="one JSON object per line")
    w.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    w.add_argument("--count", type=int, metavar="N", help="stop after N lines")
    w.add_argument(
        "--gpu",
        type=gpu_index,
        metavar="N",
        help="with --url: this machine's GPU the server runs on (read each line)",
    )
    w.set_defaults(handler=_watch)

    p = sub.add_parser("power", help="GPU power limits (NVML)")
    psub = p.add_subparsers(dest="power_command", metavar="ACTION", required=True)
    show = psub.add_parser("show", help="power, limits and state of the GPUs")
    show.add_argument("--gpu", type=gpu_index, metavar="N")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_power_show)
    st = psub.add_parser("set", help="set a power limit (needs root or the privileged helper)")
    st.add_argument("watts", type=float)
    st.add_argument("--gpu", type=gpu_index, default=0, metavar="N")
    st.set_defaults(handler=_power_set)
    rs = psub.add_parser("reset", help="restore the limit in force before the first change")
    rs.add_argument("--gpu", type=gpu_index, default=0, metavar="N")
    rs.set_defaults(handler=_power_reset)


# ---- watch ------------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def format_sample(sample: MetricsSample) -> str:
    """One human line for a sample: every live metric with a ``watch`` label, in registry order."""
    stamp = time.strftime("%H:%M:%S")
    if not sample.reachable:
        return f"{stamp}  unreachable: {sample.error}"
    snap = sample.snapshot
    if snap is None:  # reachable samples always carry one
        return f"{stamp}  no data"
    drafting = snap.has_spec_decode
    shown = [m for m in live_metrics.LIVE_METRICS if m.watch is not None and (drafting or not m.spec_decode)]
    head = "  ".join([stamp, *(f"{m.watch} {m.text(m.value(sample))}" for m in shown if not m.from_rates)])
    r = sample.rates
    if r is None:
        return f"{head}  (collecting counters of {', '.join(snap.model_names) or 'the server'}; rates follow)"
    if r.reset:
        return f"{head}  counters reset (server restarted); rates resume when the window refills"
    parts = [head]
    for m in (m for m in shown if m.from_rates):
        text = f"{m.watch} {m.text(m.value(sample))}"
        if m.key == "gen_tps":  # measured between the counter's changes in the window: say over how long
            span = r.generation_span_s if r.generation_span_s is not None else r.interval_s
            text += f" (over {span:.1f} s)"
        parts.append(text)
    if snap.has_spec_decode:
        parts.append(f"pos [{' '.join(f'{p:.2f}' for p in r.per_position) if r.per_position else '–'}]")
    parts.append(f"(window {r.interval_s:.1f} s)")  # ratios cover the whole window of snapshots
    return "  ".join(parts)


def format_gpu(sample: GpuSample) -> str:
    """The GPU part of a ``watch`` line: every GPU metric with a ``watch`` label, in registry order."""
    if sample.error is not None or not sample.readings:
        return f"gpu: {sample.error or 'no reading'}"
    values = live_metrics.gpu_values(sample.readings)
    return "  ".join(f"{m.watch} {m.text(values[m.key])}" for m in live_metrics.GPU_METRICS if m.watch)


def _watch(args: argparse.Namespace) -> int:
    key_env = args.api_key_env
    if args.url:
        url = args.url
        known = {s.url.rstrip("/"): s for s in load_attached()}
        previous = known.get(url.rstrip("/"))
        key_env = key_env or (previous.api_key_env if previous else None)
        try:
            remember_attached(
                AttachedServer(
                    url=url,
                    api_key_env=key_env,
                    container=previous.container if previous else None,
                    gpu_index=previous.gpu_index if previous else None,
                    gpu_via_container=previous.gpu_via_container if previous else False,
                )
            )
        except OSError as exc:  # a read-only data folder: watching needs nothing stored
            warn(f"the URL is not remembered for the window: {exc}")
        spec = prepare_watch(url_endpoint(url, "", api_key_env=key_env), gpu=args.gpu)
    else:
        if key_env or args.gpu is not None:
            raise DynoError("--api-key-env and --gpu go with --url; a profile names its own key and GPUs")
        spec = prepare_watch(store().get(args.name))  # the registry's server, wherever it runs
    endpoint = spec.endpoint
    read_gpus: Callable[[], GpuSample] | None = (
        gpu_sampler(spec.gpus.source) if spec.gpus.source is not None else None
    )
    if args.interval <= 0:
        raise DynoError(f"--interval must be positive, got {args.interval}")

    samples: queue.Queue[MetricsSample] = queue.Queue()
    endpoint.check_key()  # a key that cannot be sent is refused before the first scrape
    sampler = MetricsSampler(endpoint, samples.put, interval_s=args.interval, max_samples=args.count)
    sampler.start()
    printed = answered = 0
    last_error = ""
    try:
        while args.count is None or printed < args.count:
            sample = samples.get()
            gpus = read_gpus() if read_gpus is not None else None
            if args.json:
                line = json.dumps(sample.to_dict() | _gpu_json(gpus))
            else:
                line = format_sample(sample) + (f"  {format_gpu(gpus)}" if gpus is not None else "")
            with whole_lines() if args.json else contextlib.nullcontext():  # JSON lines stay whole
                print(line, flush=True)
            printed += 1
            answered += sample.reachable
            last_error = sample.error or last_error
    finally:
        sampler.stop()
    if printed and not answered:  # a watch in which nothing worked is a failure, for scripts too
        print(f"error: none of {printed} samples of {endpoint.url} succeeded: {last_error}", file=sys.stderr)
        return 1
    return 0


def _gpu_json(sample: GpuSample | None) -> dict[str, Any]:
    if sample is None:
        return {}
    if sample.error is not None or not sample.readings:
        return {"gpu": {"error": sample.error or "no reading"}}
    return {"gpu": live_metrics.gpu_values(sample.readings)}


# ---- power ------------------------------------------------------------------------------------------


def _w(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0f} W"


def _describe(r: GpuReading) -> str:
    mem = (
        f"{r.mem_used_bytes / 2**30:.1f}/{r.mem_total_bytes / 2**30:.1f} GiB"
        if r.mem_used_bytes is not None and r.mem_total_bytes is not None
        else "n/a"
    )
    reasons = ", ".join(r.throttle_reasons) or "none"
    return "\n".join(
        [
            f"GPU {r.index}: {r.name or '?'}  ({r.uuid or '?'}, driver {r.driver or '?'})",
            f"  power {_w(r.power_w)} of limit {_w(r.power_limit_w)} (enforced {_w(r.enforced_limit_w)}, "
            f"default {_w(r.default_limit_w)}, allowed {_w(r.min_limit_w)}–{_w(r.max_limit_w)})",
            f"  energy {'n/a' if r.energy_j is None else f'{r.energy_j / 1000:.1f} kJ'} since driver load",
            f"  util {_fmt(r.util_gpu_pct, '.0f', '%')} gpu / {_fmt(r.util_mem_pct, '.0f', '%')} mem, "
            f"memory {mem}, temp {_fmt(r.temperature_c, '.0f', ' °C')}, "
            f"fan {'n/a' if r.fan_pct is None else f'{r.fan_pct:.0f}%'}",
            f"  clocks SM {_fmt(r.sm_clock_mhz, 'd')}/{_fmt(r.max_sm_clock_mhz, 'd')} MHz, "
            f"mem {_fmt(r.mem_clock_mhz, 'd')}/{_fmt(r.max_mem_clock_mhz, 'd')} MHz; throttle: {reasons}",
        ]
    )


def _power_show(args: argparse.Namespace) -> int:
    session = nvml()
    readings = (session.read(args.gpu),) if args.gpu is not None else session.read_all()
    if args.json:
        print_json([r.to_dict() for r in readings])
    else:
        for r in readings:
            print(_describe(r))
    return 0


def _power_set(args: argparse.Namespace) -> int:
    (limit,) = set_limits((args.gpu,), args.watts, "llm-dyno power set")
    print(f"GPU {args.gpu}: power limit now {_w(limit.current_w)} (enforced {_w(limit.enforced_w)})")
    return 0


def _power_reset(args: argparse.Namespace) -> int:
    before = read_power_limit(args.gpu)
    limit = restore_limit(args.gpu, "llm-dyno power reset")
    print(f"GPU {args.gpu}: power limit {_w(before.current_w)} → {_w(limit.current_w)}")
    return 0
