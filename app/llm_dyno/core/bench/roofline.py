"""The physical limit of single-stream decoding: how fast the GPU can read the weights.

At batch size one, each forward pass reads every weight once from GPU memory, and reading them takes
longer than the arithmetic. So

    decode tokens/s  ≤  memory bandwidth / bytes read per forward pass  ×  mean acceptance length

where the mean acceptance length is 1 without speculative decoding (one token per pass) and
``1 + accepted / drafts`` with it (the verify pass emits the accepted draft tokens plus one).

Assumptions, all of which make the figure a ceiling rather than a prediction:

* Bytes per pass ≈ the weights in VRAM, read from ``Model loading took X GiB`` (per GPU, so with
  tensor parallelism the per-GPU share against per-GPU bandwidth, which gives the same ratio). vLLM
  loads the drafter before it logs that line, so a drafter's weights count once; its further passes
  per step are added where its size is known. KV-cache reads (small at short context) and
  activations are ignored. With ``--enable-mfu-metrics`` vLLM estimates the bytes it reads
  (``vllm:estimated_read_bytes_per_gpu_total``): per generated token, that is a second ceiling.
* Tokens per pass: the mean acceptance length from /metrics deltas, else from the log's SpecDecoding
  lines, else 1 — an assumption, said as such, when speculative decoding is on.
* A share above 100 % cannot be true: :attr:`Roofline.problem` names the input that must be wrong.
* Bandwidth is the datasheet peak: from NVML (memory clock × bus width × 2 / 8) when a reading has
  them, else from :data:`KNOWN_GPUS`. Real kernels reach roughly 70–90 % of it.
* A server well below the ceiling (say under 40 %) is losing time elsewhere: launch overhead (no or
  partial CUDA graphs), synchronisation, the drafter, or CPU work between steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_dyno.core.bench.spec_log import log_acceptance
from llm_dyno.core.runtime.logformats import EventKind, parse_events
from llm_dyno.core.telemetry.nvml import GpuReading

GIB = 1024**3

# Datasheet peak memory bandwidth, GB/s (10^9 bytes/s). Most specific patterns first: names as NVML
# reports them, lower-cased with "nvidia" and "geforce" removed.
KNOWN_GPUS: tuple[tuple[str, str, float], ...] = (
    (r"rtx 3090 ti", "RTX 3090 Ti", 1008),
    (r"rtx 3090", "RTX 3090", 936),
    (r"rtx 3080", "RTX 3080 (10 GB)", 760),
    (r"rtx 4090", "RTX 4090", 1008),
    (r"rtx 4080", "RTX 4080", 716.8),
    (r"rtx 5090", "RTX 5090", 1792),
    (r"rtx 6000 ada", "RTX 6000 Ada", 960),
    (r"rtx a6000", "RTX A6000", 768),
    (r"\ba40\b", "A40", 696),
    (r"\ba10\b", "A10", 600),
    (r"a100.*80\s?gb.*pcie|a100.*pcie.*80", "A100 80GB PCIe", 1935),
    (r"a100.*80", "A100 80GB SXM", 2039),
    (r"a100", "A100 40GB", 1555),
    (r"h100 nvl", "H100 NVL", 3900),
    (r"h100.*pcie", "H100 PCIe", 2000),
    (r"h100", "H100 SXM", 3350),
    (r"h200", "H200", 4800),
    (r"l40s", "L40S", 864),
    (r"\bl40\b", "L40", 864),
    (r"\bl4\b", "L4", 300),
    (r"\bt4\b", "T4", 320),
    (r"v100", "V100", 900),
)


def known_bandwidth(gpu_name: str) -> tuple[str, float] | None:
    """(label, bytes/s) from the datasheet table for a GPU name, or None when it is not known."""
    name = re.sub(r"\b(nvidia|geforce)\b", " ", gpu_name.lower())
    name = re.sub(r"[-_]", " ", name)
    for pattern, label, gb_s in KNOWN_GPUS:
        if re.search(pattern, name):
            return label, gb_s * 1e9
    return None


def weights_bytes_from_log(lines: Iterable[str]) -> float | None:
    """Weights in VRAM from the last ``Model loading took X GiB`` line (via logformats)."""
    found: float | None = None
    for line in lines:
        for ev in parse_events(line):
            if ev.kind is EventKind.MODEL_LOADED:
                gib = float(ev.values["gib"])
                found = gib * (GIB if ev.values.get("unit") == "GiB" else 1e9)
    return found


def log_acceptance_length(lines: Iterable[str]) -> tuple[float, int] | None:
    """Mean acceptance length over the log's SpecDecoding lines (drafted-token weighted) and their count."""
    found = log_acceptance(lines)
    return (found.mean_length, found.lines) if found is not None and found.mean_length is not None else None


_NUM_SPEC = re.compile(r"num_spec(?:ulative)?_tokens['\"]?\s*[=:]\s*(\d+)")


def speculative_tokens_from_log(lines: Iterable[str]) -> int | None:
    """Draft tokens per step from the engine's configuration line (0: ``speculative_config=None``)."""
    for line in lines:
        if "speculative_config" not in line:
            continue
        if "speculative_config=None" in line:
            return 0
        m = _NUM_SPEC.search(line)
        if m:
            return int(m.group(1))
    return None


@dataclass(frozen=True)
class PassTokens:
    """Tokens each decode pass yields, and where that figure comes from (``assumed``: nowhere)."""

    value: float
    source: str
    assumed: bool = False


def tokens_per_pass(
    measured: float | None,
    lines: Iterable[str] = (),
    *,
    measured_source: str = "/metrics: mean acceptance length",
    speculative_tokens: int | None = None,
) -> PassTokens:
    """The mean acceptance length measured from /metrics, else from the log's SpecDecoding lines, else 1
    (right without speculative decoding, an assumption that is said out loud with it or when unknown)."""
    if measured is not None and measured >= 1.0:
        return PassTokens(measured, measured_source)
    lines = list(lines)
    logged = log_acceptance_length(lines)
    if logged is not None:
        return PassTokens(
            max(1.0, logged[0]), f"log: mean acceptance length over {logged[1]} SpecDecoding lines"
        )
    k = speculative_tokens if speculative_tokens is not None else speculative_tokens_from_log(lines)
    if k == 0:
        return PassTokens(1.0, "no speculative decoding: 1 token per pass")
    if k:
        return PassTokens(
            1.0, f"assumed 1: speculative decoding (k={k}) is on but no acceptance was measured", True
        )
    return PassTokens(1.0, "assumed 1: no acceptance measured and none in the log", True)


@dataclass(frozen=True)
class Roofline:
    """The decode ceiling, what it assumed, and how much of it was achieved.

    ``ceiling_tps`` = bandwidth / bytes read per pass × tokens per pass × ``batch``, bytes per pass =
    ``weights_bytes`` (vLLM's ``Model loading took``, the drafter's weights included once) +
    ``draft_bytes_per_pass`` (the drafter's further passes, when its size is known).
    ``engine_bytes_per_token`` is vLLM's own estimate (``--enable-mfu-metrics``), a second ceiling.
    """

    bandwidth_bytes_s: float
    bandwidth_source: str
    weights_bytes: float
    mean_acceptance_length: float
    ceiling_tps: float
    achieved_tps: float | None = None
    tokens_source: str = "given"
    tokens_assumed: bool = False
    draft_bytes_per_pass: float = 0.0
    batch: int = 1
    engine_bytes_per_token: float | None = None
    weights_source: str = "'Model loading took'"  # where the weights' size came from

    @property
    def bytes_per_pass(self) -> float:
        """Bytes read from memory per decode pass (weights, plus the drafter's further passes)."""
        return self.weights_bytes + self.draft_bytes_per_pass

    @property
    def achieved_share(self) -> float | None:
        """Achieved tokens/s over the ceiling (may exceed 1: then :attr:`problem` says why)."""
        if self.achieved_tps is None or self.ceiling_tps <= 0:
            return None
        return self.achieved_tps / self.ceiling_tps

    @property
    def plausible_share(self) -> float | None:
        """The share when it can be true (at most 100 %), else None: one input is wrong."""
        share = self.achieved_share
        return share if share is not None and share <= 1.0 else None

    @property
    def engine_ceiling_tps(self) -> float | None:
        """The ceiling from vLLM's own bytes-read estimate per generated token, when the server has it."""
        b = self.engine_bytes_per_token
        return self.bandwidth_bytes_s / b if b and b > 0 else None

    @property
    def problem(self) -> str | None:
        """Which input is wrong when the achieved figure is above the ceiling (None when it is not)."""
        share = self.achieved_share
        if share is None or share <= 1.0 or self.achieved_tps is None:
            return None
        need = self.achieved_tps / (self.bandwidth_bytes_s / self.bytes_per_pass * self.batch)
        head = (
            f"achieved {self.achieved_tps:.1f} tok/s is above the {self.ceiling_tps:.0f} tok/s ceiling, "
            "so an input is wrong: "
        )
        if self.tokens_assumed:
            return head + (
                f"tokens per pass ({self.tokens_source}); reaching {self.achieved_tps:.1f} tok/s takes at "
                f"least {need:.2f} tokens per pass"
            )
        engine, per_token = self.engine_ceiling_tps, self.engine_bytes_per_token
        if engine is not None and per_token is not None and engine >= self.achieved_tps:
            return head + (
                f"bytes per pass: vLLM's own estimate reads {per_token / GIB:.2f} GiB per token "
                f"(ceiling {engine:.0f} tok/s), less than the {self.bytes_per_pass / GIB:.2f} GiB in VRAM"
            )
        return head + (
            f"it needs {need:.2f} tokens per pass against {self.mean_acceptance_length:.2f} measured "
            f"({self.tokens_source}): either acceptance was measured over other requests than the speed, "
            f"the bandwidth ({self.bandwidth_source}) is too low, or fewer bytes are read per pass than "
            "'Model loading took' (e.g. a mixture of experts reads only its active experts)"
        )

    def assumptions(self) -> list[str]:
        """What the figure assumed, one line each, for tooltips and reports."""
        out = [
            f"bandwidth {self.bandwidth_bytes_s / 1e9:,.0f} GB/s: {self.bandwidth_source} "
            "(real kernels reach ~85–90 % of peak)",
            f"bytes per pass {self.bytes_per_pass / GIB:.2f} GiB: {self.weights_source} "
            "(the drafter's weights included once)"
            + (
                f" + {self.draft_bytes_per_pass / GIB:.2f} GiB for the drafter's further passes"
                if self.draft_bytes_per_pass
                else "; a drafter's further passes per step not counted"
            ),
            f"tokens per pass {self.mean_acceptance_length:.2f}: {self.tokens_source}",
            "KV-cache reads (small at short context) and activations ignored",
        ]
        if self.batch > 1:
            out.append(f"{self.batch} requests decode together: one pass serves all of them")
        return out

    def _weights_note(self) -> str:
        """`` (post line 76)`` where the weights were not read from the log's 'Model loading took'."""
        return "" if self.weights_source == "'Model loading took'" else f" ({self.weights_source})"

    def describe(self) -> str:
        """One line for humans (the share only when it can be true; else which input is wrong)."""
        text = (
            f"ceiling {self.ceiling_tps:.0f} tok/s = {self.bandwidth_bytes_s / 1e9:.0f} GB/s "
            f"({self.bandwidth_source}) / {self.bytes_per_pass / GIB:.2f} GiB{self._weights_note()} × "
            f"{self.mean_acceptance_length:.2f} tokens per pass ({self.tokens_source})"
        )
        if self.batch > 1:
            text += f" × {self.batch} requests"
        share = self.achieved_share
        if self.problem is not None:
            text += f"; {self.problem}"
        elif share is not None and self.achieved_tps is not None:
            text += f"; achieved {self.achieved_tps:.1f} tok/s = {share:.0%}"
        engine, per_token = self.engine_ceiling_tps, self.engine_bytes_per_token
        if engine is not None and per_token is not None:
            text += (
                f"; vLLM's estimate: {per_token / GIB:.2f} GiB read per token → ceiling {engine:.0f} tok/s"
            )
            if self.achieved_tps is not None and self.achieved_tps <= engine:
                text += f" ({self.achieved_tps / engine:.0%})"
        return text


def decode_ceiling(
    *,
    weights_bytes: float,
    bandwidth_bytes_s: float,
    mean_acceptance_length: float = 1.0,
    achieved_tps: float | None = None,
    bandwidth_source: str = "given",
    tokens_source: str = "given",
    tokens_assumed: bool = False,
    draft_bytes_per_pass: float = 0.0,
    batch: int = 1,
    engine_bytes_per_token: float | None = None,
    weights_source: str = "'Model loading took'",
) -> Roofline:
    """The ceiling for given numbers (see the module docstring and :class:`Roofline`)."""
    if weights_bytes <= 0 or bandwidth_bytes_s <= 0:
        raise ValueError("weights and bandwidth must be positive")
    length = max(1.0, mean_acceptance_length)
    batch = max(1, batch)
    ceiling = bandwidth_bytes_s / (weights_bytes + max(0.0, draft_bytes_per_pass)) * length * batch
    return Roofline(
        bandwidth_bytes_s, bandwidth_source, weights_bytes, length, ceiling, achieved_tps, tokens_source,
        tokens_assumed, max(0.0, draft_bytes_per_pass), batch, engine_bytes_per_token, weights_source,
    )  # fmt: skip


def separate_draft_bytes(speculative_config: Mapping[str, Any] | None) -> float:
    """Bytes a separate draft model adds per decode step beyond its one load in "Model loading took".

    A drafter with its own weights (``"model": <local folder>``, e.g. ``method: draft_model``) runs
    ``num_speculative_tokens`` passes per step, each reading its weights; one of them is counted in the
    logged VRAM already. The size is that of the folder's weight files; 0 when the config names no
    local folder (MTP heads, ngram, a hub id, a path inside a container): the roofline then says the
    drafter's further passes are not counted.
    """
    if not speculative_config:
        return 0.0
    model, k = speculative_config.get("model"), speculative_config.get("num_speculative_tokens")
    if not isinstance(model, str) or not isinstance(k, int) or k < 2:
        return 0.0
    folder = Path(model).expanduser()
    try:
        size = sum(f.stat().st_size for pattern in _WEIGHT_FILES for f in folder.glob(pattern))
    except OSError:
        return 0.0
    return float(size * (k - 1))


_WEIGHT_FILES = ("*.safetensors", "*.bin", "*.pt")


def bandwidth_for(gpu_name: str | None, readings: Iterable[GpuReading] = ()) -> tuple[float, str] | None:
    """(bytes/s, source): NVML's clock × bus width when a reading has them, else the datasheet table."""
    for r in readings:
        bw = r.memory_bandwidth_bytes_s
        if bw:
            # the max memory clock, not the current one: an idle GPU downclocks its memory
            if r.max_mem_clock_mhz and r.mem_bus_width_bits:
                bw = r.max_mem_clock_mhz * 1e6 * r.mem_bus_width_bits * 2 / 8
            return bw, "NVML clock × bus width"
    if gpu_name:
        known = known_bandwidth(gpu_name)
        if known:
            return known[1], f"{known[0]} datasheet"
    return None


def roofline(
    lines: Iterable[str],
    gpu_name: str | None,
    readings: Iterable[GpuReading] = (),
    mean_acceptance_length: float | None = None,
    achieved_tps: float | None = None,
    *,
    tokens_source: str = "/metrics: mean acceptance length",
    speculative_tokens: int | None = None,
    draft_bytes_per_pass: float = 0.0,
    engine_bytes_per_token: float | None = None,
    stated_weights: tuple[float, str] | None = None,
) -> Roofline | None:
    """The ceiling from a launch log and the GPU, or None when the weights or bandwidth are unknown.

    Weights: the log's ``Model loading took``, else ``stated_weights`` (bytes, where they were stated:
    a pasted post's "Model VRAM"). Tokens per pass: ``mean_acceptance_length`` (measured), else the
    log's SpecDecoding lines, else 1 (said to be assumed where speculative decoding is on or unknown),
    see :func:`tokens_per_pass`.
    """
    lines = list(lines)
    weights = weights_bytes_from_log(lines)
    weights_source = "'Model loading took'"
    if weights is None and stated_weights is not None and stated_weights[0] > 0:
        weights, weights_source = stated_weights
    bw = bandwidth_for(gpu_name, readings)
    if weights is None or bw is None:
        return None
    tokens = tokens_per_pass(
        mean_acceptance_length, lines, measured_source=tokens_source, speculative_tokens=speculative_tokens
    )
    return decode_ceiling(
        weights_bytes=weights,
        bandwidth_bytes_s=bw[0],
        mean_acceptance_length=tokens.value,
        achieved_tps=achieved_tps,
        bandwidth_source=bw[1],
        tokens_source=tokens.source,
        tokens_assumed=tokens.assumed,
        draft_bytes_per_pass=draft_bytes_per_pass,
        engine_bytes_per_token=engine_bytes_per_token,
        weights_source=weights_source,
    )
