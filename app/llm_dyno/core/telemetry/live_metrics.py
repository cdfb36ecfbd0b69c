"""The live metrics: one spec per figure that ``llm-dyno watch`` and the dashboard show.

Each :class:`LiveMetric` says, in one place, which ``/metrics`` counters or gauges it comes from, how
a sample becomes its value (a gauge of the snapshot, or a rate or ratio over the sampler's window),
the series key the dashboard stores and exports it under, the plot it is drawn on (title, legend,
unit), its caption in the dashboard's header and its label in ``watch`` lines. The dashboard
(``ui/dashboard/feed.py``, ``plot_specs.py``, ``header.py``) and ``watch``
(``commands/telemetry_cmds.py``) iterate over :data:`LIVE_METRICS`; none keeps a list of its own.

Per-position acceptance is a family (one series per draft position, as many as the server reports):
:func:`position_key` names its series.

The GPU's figures (power and its limit, utilisation, temperature, clocks, memory use) come from NVML or
nvidia-smi, not ``/metrics``: each is a :class:`GpuMetric` of :data:`GPU_METRICS`, which says how the
readings of the server's GPUs become its value (summed, averaged, the hottest), its series key, plot and
header figure and ``watch`` label. The dashboard (``feed.py``, ``plot_specs.py``, ``header.py``) and
``watch`` (with a GPU to read) iterate over it as well.

To add a metric, add an entry here (and, when it needs a counter the snapshot does not read yet, the
counter in :mod:`llm_dyno.core.telemetry.metrics`); docs/guide.md "Extending" shows one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llm_dyno.core.telemetry.metrics import READ_NAMES, MetricsSnapshot
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample
from llm_dyno.core.telemetry.nvml import GpuReading
from llm_dyno.core.telemetry.rates import MetricsRates

Reader = Callable[[MetricsSnapshot, MetricsRates], "float | None"]
GpuReader = Callable[[Sequence[GpuReading]], "float | None"]


@dataclass(frozen=True)
class LiveMetric:
    """One live figure, from the server's counters to the text the front ends show.

    ``read`` gets the snapshot and, for a metric with ``from_rates``, the window's rates (it is not
    called without rates, nor for a window in which the counters were reset). ``plot`` is None for a
    value the dashboard keeps but draws nowhere; ``header`` / ``watch`` None keep it out of the header
    strip / the ``watch`` line. ``spec_decode`` metrics exist only while the server drafts tokens.
    """

    key: str
    counters: tuple[str, ...]
    read: Reader
    unit: str
    fmt: str
    label: str
    plot: str | None
    plot_title: str = ""
    header: str | None = None
    header_fmt: str | None = None
    watch: str | None = None
    from_rates: bool = True
    spec_decode: bool = False

    def value(self, sample: MetricsSample) -> float | None:
        """This metric's value in ``sample`` (None where the server gives none or rates are not ready)."""
        snap, rates = sample.snapshot, sample.rates
        if snap is None or (self.from_rates and (rates is None or rates.reset)):
            return None
        return self.read(snap, rates if rates is not None else MetricsRates(interval_s=0.0))

    def text(self, value: float | None) -> str:
        """``value`` with its unit, e.g. ``62.5 %`` (a dash when None)."""
        if value is None or value != value:
            return "–"
        gap = "" if not self.unit or self.unit.startswith("/") else " "
        return self.fmt.format(value) + gap + self.unit

    def header_text(self, value: float | None) -> str:
        """``value`` as the header strip shows it (its own format where given)."""
        if value is None or value != value:
            return "—"
        return self.header_fmt.format(value) if self.header_fmt is not None else self.text(value)


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


LIVE_METRICS: tuple[LiveMetric, ...] = (
    LiveMetric(
        "gen_tps", ("vllm:generation_tokens_total",), lambda _s, r: r.generation_tps, "tok/s", "{:.1f}",
        "generation", "tokens", "Throughput · tok/s", header="Generation tok/s", header_fmt="{:,.1f}",
        watch="gen",
    ),
    LiveMetric(
        "prompt_tps", ("vllm:prompt_tokens_total",), lambda _s, r: r.prompt_tps, "tok/s", "{:.1f}",
        "prompt", "tokens", "Throughput · tok/s", watch="prompt",
    ),
    # Acceptance exists only while drafting: an idle interval has none (no gap), so the line joins the
    # intervals that had drafts, like the per-position lines do.
    LiveMetric(
        "acceptance_pct",
        ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"),
        lambda _s, r: _pct(r.acceptance_rate), "%", "{:.1f}", "rate", "acceptance",
        "Draft acceptance · %", header="Acceptance", watch="accept", spec_decode=True,
    ),
    LiveMetric(
        "mean_acceptance_length",
        ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total"),
        lambda _s, r: r.mean_acceptance_length, "tok", "{:.2f}", "mean length", "length",
        "Mean acceptance length · tokens", header="Mean acc. length", header_fmt="{:.2f}", watch="len",
        spec_decode=True,
    ),
    LiveMetric(
        "running", ("vllm:num_requests_running",), lambda s, _r: s.running, "", "{:.0f}", "running",
        "requests", "Requests", watch="run", from_rates=False,
    ),
    LiveMetric(
        "waiting", ("vllm:num_requests_waiting",), lambda s, _r: s.waiting, "", "{:.0f}", "waiting",
        "requests", "Requests", watch="wait", from_rates=False,
    ),
    LiveMetric(
        "kv_pct", ("vllm:kv_cache_usage_perc",), lambda s, _r: _pct(s.kv_cache_usage), "%", "{:.1f}",
        "KV cache", "kv", "KV cache use · %", header="KV cache", watch="kv", from_rates=False,
    ),
    LiveMetric(
        "prefix_hit_pct", ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
        lambda _s, r: _pct(r.prefix_cache_hit_rate), "%", "{:.1f}", "prefix hit", None, watch="prefix hit",
    ),
    LiveMetric(
        "preemptions_per_s", ("vllm:num_preemptions_total",), lambda _s, r: r.preemptions_per_s,
        "/s", "{:.2f}", "preemptions", None, watch="preempt",
    ),
    # vLLM's own estimate of the bytes it read (--enable-mfu-metrics): the Roofline figure's second input
    LiveMetric(
        "read_bytes_per_s", ("vllm:estimated_read_bytes_per_gpu_total",), lambda _s, r: r.read_bytes_per_s,
        "B/s", "{:.3g}", "read", None,
    ),
)  # fmt: skip

POSITION_PLOT = "acceptance"  # the plot the per-position acceptance lines join


def position_key(i: int) -> str:
    """The series key of the acceptance at draft position ``i`` (1-based)."""
    return f"acc_pos{i}_pct"


def position_of(key: str) -> int | None:
    """The draft position a :func:`position_key` names (None for any other key)."""
    head, tail = "acc_pos", "_pct"
    digits = key[len(head) : -len(tail)] if key.startswith(head) and key.endswith(tail) else ""
    return int(digits) if digits.isdigit() else None


def ready(metric: LiveMetric, sample: MetricsSample) -> bool:
    """Whether ``sample`` can give ``metric`` a value (its rates are there when it needs them)."""
    rates = sample.rates
    return sample.snapshot is not None and (not metric.from_rates or (rates is not None and not rates.reset))


def position_values(sample: MetricsSample) -> dict[str, float | None]:
    """The per-position acceptance of ``sample``, in %, by :func:`position_key`."""
    rates = sample.rates
    if sample.snapshot is None or rates is None or rates.reset:
        return {}
    return {position_key(i + 1): _pct(p) for i, p in enumerate(rates.per_position or ())}


# ---- GPU figures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuMetric:
    """One GPU figure, from the readings of the server's GPUs to the text the dashboard shows.

    ``read`` gets every watched GPU's reading (one per GPU, in index order) and gives the server's
    value; ``combined`` says how, for its header figure's tooltip with several GPUs (``{count}``: how many).
    ``plot`` None keeps the series (CSV) without a curve; ``y_min`` None lets the plot's axis float.
    ``header`` is the caption of its figure ``figure`` in the header strip; a ``limit`` (another GPU
    metric's key) is shown after the value, as ``412 / 700 W``. ``watch`` is its label in the GPU part
    of a ``watch`` line (None keeps it out).
    """

    key: str
    read: GpuReader
    unit: str
    fmt: str
    label: str
    plot: str | None
    plot_title: str = ""
    y_min: float | None = 0.0
    combined: str = ""
    header: str | None = None
    figure: str = ""
    limit: str | None = None
    watch: str | None = None

    def text(self, value: float | None) -> str:
        """``value`` with its unit, e.g. ``61 °C`` (a dash when None)."""
        if value is None or value != value:
            return "–"
        return self.fmt.format(value) + (" " + self.unit if self.unit else "")

    def header_text(self, value: float | None, limit: float | None = None) -> str:
        """``value`` as the header strip shows it: ``61 °C``, or with its limit ``412 / 700 W``."""
        if value is None or value != value:
            return "—"
        if self.limit is None:
            return self.text(value)
        shown = "—" if limit is None or limit != limit else self.text(limit)
        return f"{self.fmt.format(value)} / {shown}"


def _sum(values: Sequence[float | int | None]) -> float | None:
    # a sum missing one GPU's share would read as a real, too low total: none at all instead
    if not values or any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def _known(values: Sequence[float | int | None]) -> list[float]:
    return [float(v) for v in values if v is not None]


def _mean(values: Sequence[float | int | None]) -> float | None:
    known = _known(values)
    return sum(known) / len(known) if known else None


def _hottest(values: Sequence[float | int | None]) -> float | None:
    return max(_known(values), default=None)


def _mem_used_pct(readings: Sequence[GpuReading]) -> float | None:
    used = _sum([r.mem_used_bytes for r in readings])
    total = _sum([r.mem_total_bytes for r in readings])
    return None if used is None or not total else 100.0 * used / total


GPU_METRICS: tuple[GpuMetric, ...] = (
    GpuMetric(
        "power_w", lambda rs: _sum([r.power_w for r in rs]), "W", "{:.0f}", "power", "power", "GPU power · W",
        combined="power and power limit summed over the {count} GPUs (the plots also average utilisation "
        "and SM clock, and show the hottest GPU's temperature)",
        header="Power / limit", figure="power", limit="power_limit_w", watch="power",
    ),
    GpuMetric(
        "power_limit_w", lambda rs: _sum([r.enforced_limit_w or r.power_limit_w for r in rs]), "W", "{:.0f}",
        "limit", "power", "GPU power · W", watch="limit",
    ),
    # utilisation and temperature apart: % and °C on one axis read as one scale
    GpuMetric(
        "util_pct", lambda rs: _mean([r.util_gpu_pct for r in rs]), "%", "{:.0f}", "util", "gpu",
        "GPU utilisation · %", watch="util",
    ),
    GpuMetric(
        "temp_c", lambda rs: _hottest([r.temperature_c for r in rs]), "°C", "{:.0f}", "temp", "temp",
        "GPU temperature · °C", y_min=None, combined="the hottest of the {count} GPUs",
        header="Temperature", figure="temp", watch="temp",
    ),
    GpuMetric(
        "sm_clock_mhz", lambda rs: _mean([r.sm_clock_mhz for r in rs]), "MHz", "{:.0f}", "SM clock", "clock",
        "SM clock · MHz", watch="sm",
    ),
    GpuMetric(
        "sm_clock_max_mhz", lambda rs: _mean([r.max_sm_clock_mhz for r in rs]), "MHz", "{:.0f}", "max",
        "clock", "SM clock · MHz",
    ),
    GpuMetric("mem_used_pct", _mem_used_pct, "%", "{:.1f}", "memory", None),
)  # fmt: skip


def gpu_values(readings: Sequence[GpuReading]) -> dict[str, float | None]:
    """The GPU figures of the watched GPUs, by series key, one value each however many GPUs there are."""
    return {m.key: m.read(readings) for m in GPU_METRICS}


def check_registry(metrics: tuple[LiveMetric, ...], gpu_metrics: tuple[GpuMetric, ...] | None = None) -> None:
    """Refuse a registry with a key twice, two titles (or axis floors) for one plot, a counter the scrape
    does not read, a header figure twice or a limit that is not a GPU metric (raises ValueError; the
    registry is checked at import). ``gpu_metrics`` by default :data:`GPU_METRICS`."""
    gpus = GPU_METRICS if gpu_metrics is None else gpu_metrics
    seen: set[str] = set()
    titles: dict[str, str] = {}
    both: tuple[LiveMetric | GpuMetric, ...] = (*metrics, *gpus)
    for m in both:
        if m.key in seen:
            raise ValueError(f"live metric {m.key!r} is registered twice")
        seen.add(m.key)
        if m.plot is not None and titles.setdefault(m.plot, m.plot_title) != m.plot_title:
            raise ValueError(f"plot {m.plot!r} has two titles: {titles[m.plot]!r} and {m.plot_title!r}")
    for m in metrics:
        unread = sorted(set(m.counters) - READ_NAMES)
        if not m.counters or unread:
            raise ValueError(
                f"live metric {m.key!r}: /metrics series not read by the scrape: {unread or 'none named'}"
            )
    floors: dict[str, float | None] = {}
    figures: set[str] = {m.key for m in metrics if m.header is not None}
    for g in gpus:
        if g.plot is not None and floors.setdefault(g.plot, g.y_min) != g.y_min:
            raise ValueError(f"plot {g.plot!r} has two axis floors")
        if g.limit is not None and g.limit not in {x.key for x in gpus}:
            raise ValueError(f"GPU metric {g.key!r}: its limit {g.limit!r} is not a GPU metric")
        if g.header is not None:
            if not g.figure or g.figure in figures:
                raise ValueError(f"GPU metric {g.key!r}: header figure {g.figure!r} is empty or taken")
            figures.add(g.figure)


check_registry(LIVE_METRICS)
