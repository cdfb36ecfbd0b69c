"""The one place that knows vLLM's Prometheus metric names: scrape ``/metrics``, snapshot.

A :class:`MetricsSnapshot` is one scrape reduced to the numbers the app shows, summed over every
``engine`` (one per data-parallel engine core) and ``model_name``. Rates over snapshots are
:mod:`~llm_dyno.core.telemetry.rates`; scrapes on a thread, with those rates, for ``watch`` and the
dashboard are :mod:`~llm_dyno.core.telemetry.metrics_sampler`.

Names drift between versions (see reference/VLLM_FACTS.md §1): counters are exposed with ``_total``
(older declarations without it are accepted too), the prefix-cache counters were ``gpu_prefix_cache_*``
up to 0.10, and KV use was ``gpu_cache_usage_perc`` (V0 CPU servers: ``cpu_cache_usage_perc``)
before ``kv_cache_usage_perc``. Each quantity lists its names, preferred first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.httpbounds import METRICS_LIMIT, BoundsError, get_bounded, read_body, send_bounded
from llm_dyno.core.httpclient import auth_headers
from llm_dyno.core.telemetry.exposition import SampleReader, TooManySamples

if TYPE_CHECKING:
    import httpx  # imported where a server is first read: the window starts without it

# Counters: field name -> exposed names, preferred first. Values are summed over all label sets.
_COUNTERS: dict[str, tuple[str, ...]] = {
    "generation_tokens": ("vllm:generation_tokens_total", "vllm:generation_tokens"),
    "prompt_tokens": ("vllm:prompt_tokens_total", "vllm:prompt_tokens"),
    "spec_drafts": ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_drafts"),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_draft_tokens"),
    "spec_accepted_tokens": (
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:spec_decode_num_accepted_tokens",
    ),
    "preemptions": ("vllm:num_preemptions_total", "vllm:num_preemptions"),
    # 0.10 exposes both; the gpu_ names were in blocks at 0.8, so the new ones come first.
    "prefix_cache_queries": (
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_queries",
        "vllm:gpu_prefix_cache_queries_total",
        "vllm:gpu_prefix_cache_queries",
    ),
    "prefix_cache_hits": (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_hits",
        "vllm:gpu_prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_hits",
    ),
    "request_success": ("vllm:request_success_total", "vllm:request_success"),
    # with --enable-mfu-metrics: vLLM's own estimate of the bytes it read, per GPU (a roofline input)
    "estimated_read_bytes": (
        "vllm:estimated_read_bytes_per_gpu_total",
        "vllm:estimated_read_bytes_per_gpu",
    ),
}
_PER_POS = (
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
    "vllm:spec_decode_num_accepted_tokens_per_pos",
)
# Gauges summed over engines (request counts).
_SUMMED_GAUGES: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running",),
    "waiting": ("vllm:num_requests_waiting",),
}
# KV use is a fraction per engine; the mean over engines is the pool's use when engines are alike.
_KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:cpu_cache_usage_perc")


class MetricsError(DynoError):
    """``/metrics`` could not be fetched or read."""


def _frozen(d: dict[int, float]) -> Mapping[int, float]:
    return MappingProxyType(dict(sorted(d.items())))


@dataclass(frozen=True)
class MetricsSnapshot:
    """One scrape of ``/metrics``: counters (cumulative since server start) and gauges.

    ``taken_at`` is ``time.monotonic()`` at the scrape. A counter the server does not expose is
    None (e.g. the ``spec_*`` ones without speculative decoding). ``kv_cache_usage`` is a fraction.
    """

    taken_at: float
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    spec_drafts: float | None = None
    spec_draft_tokens: float | None = None
    spec_accepted_tokens: float | None = None
    spec_accepted_per_pos: Mapping[int, float] = field(default_factory=lambda: _frozen({}))
    preemptions: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    request_success: float | None = None
    estimated_read_bytes: float | None = None
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None
    engines: int = 0
    model_names: tuple[str, ...] = ()

    @property
    def has_spec_decode(self) -> bool:
        """Whether the server exposes speculative-decoding counters."""
        return self.spec_drafts is not None or self.spec_draft_tokens is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (per-position keys as strings)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["spec_accepted_per_pos"] = {str(k): v for k, v in self.spec_accepted_per_pos.items()}
        out["model_names"] = list(self.model_names)
        return out

    def counters(self) -> dict[str, float]:
        """Every counter present, per-position ones as ``spec_accepted_pos<i>`` (for reset checks)."""
        out = {name: v for name in _COUNTERS if (v := getattr(self, name)) is not None}
        out.update({f"spec_accepted_pos{i}": v for i, v in self.spec_accepted_per_pos.items()})
        return out


def _wanted_names() -> frozenset[str]:
    names: set[str] = set(_KV_USAGE) | set(_PER_POS)
    for table in (_COUNTERS, _SUMMED_GAUGES):
        for aliases in table.values():
            names.update(aliases)
    # a counter's _created series are kept (and ignored when summing): they still show which engines
    # exist when a scrape has nothing else for them yet
    names.update(n.removesuffix("_total") + "_created" for n in list(names) if n.endswith("_total"))
    return frozenset(names)


# one reader for every server: the same series recur across servers of one vLLM version
READ_NAMES = _wanted_names()  # every series name a scrape keeps
_READER = SampleReader(READ_NAMES, prefix="vllm:")


def _reading(value: float | None) -> float | None:
    """``value``, or None where summing finite samples overflowed (two engines at 1e308)."""
    return value if value is None or math.isfinite(value) else None


def parse_metrics(text: str, taken_at: float | None = None) -> MetricsSnapshot:
    """Read Prometheus exposition text into a snapshot (``_created`` series are ignored, and so are
    samples whose value is not a finite number >= 0: a counter at ``+Inf`` is no count)."""
    sums: dict[str, float] = {}
    kv: dict[str, list[float]] = {}
    per_pos: dict[str, dict[int, float]] = {}
    engines: set[str] = set()
    models: set[str] = set()
    try:
        samples = _READER.read(text)
    except TooManySamples as exc:
        raise MetricsError(f"the /metrics answer has {exc}") from None
    except ValueError as exc:
        raise MetricsError(f"cannot parse /metrics text: {exc}") from exc
    for name, labels, value in samples:
        if not name.startswith("vllm:"):
            continue
        if "engine" in labels:
            engines.add(labels["engine"])
        if "model_name" in labels:
            models.add(labels["model_name"])
        # every series read counts something or is a fraction: a value that is no finite number >= 0
        # (NaN, +Inf, -Inf, a negative count) is no reading, refused as if the series were absent
        if name.endswith("_created") or not (math.isfinite(value) and value >= 0):
            continue
        if name in _PER_POS:
            try:
                pos = int(labels.get("position", "0"))
            except ValueError as exc:
                raise MetricsError(f"cannot parse /metrics text: bad position label in {name}") from exc
            bucket = per_pos.setdefault(name, {})
            bucket[pos] = bucket.get(pos, 0.0) + value
        elif name in _KV_USAGE:
            kv.setdefault(name, []).append(value)
        else:
            sums[name] = sums.get(name, 0.0) + value

    def first(names: tuple[str, ...]) -> float | None:
        found = next((sums[n] for n in names if n in sums), None)
        return _reading(found)

    values: dict[str, float | None] = {name: first(names) for name, names in _COUNTERS.items()}
    values.update({name: first(names) for name, names in _SUMMED_GAUGES.items()})
    kv_values = next((kv[n] for n in _KV_USAGE if n in kv), None)
    pos_values = next((per_pos[n] for n in _PER_POS if n in per_pos), {})
    pos_values = {i: v for i, v in pos_values.items() if math.isfinite(v)}
    return MetricsSnapshot(
        taken_at=time.monotonic() if taken_at is None else taken_at,
        spec_accepted_per_pos=_frozen(pos_values),
        kv_cache_usage=_reading(sum(kv_values) / len(kv_values)) if kv_values else None,
        engines=len(engines) or (1 if sums else 0),
        model_names=tuple(sorted(models)),
        **values,
    )


def metrics_url(base_url: str) -> str:
    """``http://host:port`` (or one ending in ``/v1`` or ``/metrics``) -> its ``/metrics`` URL."""
    url = base_url.rstrip("/")
    if url.endswith("/metrics"):
        return url
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url + "/metrics"


def _snapshot_of(url: str, status: int, content: bytes, taken_at: float) -> MetricsSnapshot:
    if status == 401:
        raise MetricsError(f"{url}: 401 Unauthorized", hint="pass the server's API key (--api-key-env VAR)")
    if status != 200:
        raise MetricsError(f"{url}: HTTP {status}")
    # an exposition line starts with '#' or a metric name: JSON or HTML is another server's answer,
    # which would read as a server with no metrics at all, as if all was fine
    first = content.lstrip()[:1]
    if first and not (first == b"#" or first.isalpha() or first in b"_:"):
        raise MetricsError(
            f"{url}: the answer is not Prometheus text (it starts with {first.decode('latin-1')!r})",
            hint="is the URL a vLLM server's? its /metrics answers Prometheus text",
        )
    # Prometheus text is UTF-8 by definition: decode it directly, no charset sniffing
    return parse_metrics(content.decode("utf-8", "replace"), taken_at)


SCRAPE_DEADLINE_S = 5.0  # one /metrics answer, whole, within this


def _unreachable(url: str, exc: Exception) -> MetricsError:
    return MetricsError(f"{url}: {type(exc).__name__}: {exc}", hint="is the server running?")


def scrape(client: httpx.Client, base_url: str, *, deadline_s: float = SCRAPE_DEADLINE_S) -> MetricsSnapshot:
    """GET ``/metrics`` (at most 16 MiB, within ``deadline_s``) with ``client`` (from
    :func:`~llm_dyno.core.httpclient.http_client`, which carries the key) and parse it. Raises
    :class:`MetricsError` when the server does not answer or its answer breaks a bound."""
    import httpx

    url = metrics_url(base_url)
    try:
        status, content = get_bounded(
            client,
            url,
            limit=METRICS_LIMIT,
            deadline_s=deadline_s,
            what="/metrics answer",
        )
    except httpx.HTTPError as exc:
        raise _unreachable(url, exc) from exc
    except BoundsError as exc:
        raise MetricsError(exc.message, hint=exc.hint) from None
    return _snapshot_of(url, status, content, time.monotonic())


class MetricsReader:
    """Scrapes one server's ``/metrics`` again and again, as cheaply as httpx allows: the request is
    built once and sent straight to a transport that keeps the connection alive (a client would
    rebuild and merge URL, headers and cookies on every call: ~40 % of a GET's CPU time). Proxy
    variables are not read, as for the other probes of a server. Not thread-safe; ``close`` it."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 2.0,
        deadline_s: float = SCRAPE_DEADLINE_S,
    ) -> None:
        import httpx

        self._httpx = httpx  # kept: read() runs at 4 Hz and needs it each time
        self.url = metrics_url(base_url)
        self._deadline_s = deadline_s
        self._headers = auth_headers(api_key)
        self._timeout = httpx.Timeout(timeout_s).as_dict()
        self._transport = httpx.HTTPTransport()
        self._request: httpx.Request | None = None

    def read(self) -> MetricsSnapshot:
        """One scrape. Raises :class:`MetricsError` when the server does not answer or the URL is bad."""
        httpx = self._httpx
        try:
            if self._request is None:
                self._request = httpx.Request(
                    "GET", self.url, headers=self._headers, extensions={"timeout": self._timeout}
                )
            start = time.monotonic()
            response = send_bounded(
                self._transport, self._request, url=self.url, deadline_s=self._deadline_s, started=start
            )
            content = read_body(
                response,
                self.url,
                limit=METRICS_LIMIT,
                deadline_s=self._deadline_s,
                what="/metrics answer",
                started=start,
            )
        except httpx.HTTPError as exc:
            raise _unreachable(self.url, exc) from exc
        except BoundsError as exc:
            raise MetricsError(exc.message, hint=exc.hint) from None
        return _snapshot_of(self.url, response.status_code, content, time.monotonic())

    def close(self) -> None:
        """Close the kept-alive connection."""
        self._transport.close()
