"""The physical limit of single-stream decoding: how fast the GPU can read the weights.

At batch size one, each forward pass reads every weight once from GPU memory, and reading them takes
longer than the arithmetic. So

    decode tokens/s  ≤  memory bandwidth / bytes read per forward pass  ×  mean acceptance length

where the mean acceptance length is 1 without speculative decoding (one token per pass) and
``1 + accepted / drafts`` with it (the verify pass emits the accepted draft tokens plus one).

Assumptions, all of which make the figure a ceiling rather than a prediction:

* Bytes per pass ≈ the weights in VRAM, read from ``Model loading took X GiB`` (per GPU, so with
  tensor parallelism the per-GPU share against per-GPU bandwidth, which gives the same ratio).
  KV-cache reads (small at short context), activations and the drafter's own passes are ignored.
* Bandwidth is the datasheet peak: from NVML (memory clock × bus width × 2 / 8) when a reading has
  them, else from :data:`KNOWN_GPUS`. Real kernels reach roughly 70–90 % of it.
* A server well below the ceiling (say under 40 %) is losing time elsewhere: launch overhead (no or
  partial CUDA graphs), synchronisation, the drafter, or CPU work between steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from llm_dyno.core.telemetry.logformats import EventKind, parse_events
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


@dataclass(frozen=True)
class Roofline:
    """The decode ceiling and how much of it was achieved (``achieved_share`` 0..1, None if unknown)."""

    bandwidth_bytes_s: float
    bandwidth_source: str
    weights_bytes: float
    mean_acceptance_length: float
    ceiling_tps: float
    achieved_tps: float | None = None

    @property
    def achieved_share(self) -> float | None:
        """Achieved tokens/s over the ceiling."""
        if self.achieved_tps is None or self.ceiling_tps <= 0:
            return None
        return self.achieved_tps / self.ceiling_tps

    def describe(self) -> str:
        """One line for humans."""
        text = (
            f"ceiling {self.ceiling_tps:.0f} tok/s = {self.bandwidth_bytes_s / 1e9:.0f} GB/s "
            f"({self.bandwidth_source}) / {self.weights_bytes / GIB:.2f} GiB × "
            f"{self.mean_acceptance_length:.2f} tokens per pass"
        )
        share = self.achieved_share
        if share is not None and self.achieved_tps is not None:
            text += f"; achieved {self.achieved_tps:.1f} tok/s = {share:.0%}"
        return text


def decode_ceiling(
    *,
    weights_bytes: float,
    bandwidth_bytes_s: float,
    mean_acceptance_length: float = 1.0,
    achieved_tps: float | None = None,
    bandwidth_source: str = "given",
) -> Roofline:
    """The ceiling for given numbers (see the module docstring for the assumptions)."""
    if weights_bytes <= 0 or bandwidth_bytes_s <= 0:
        raise ValueError("weights and bandwidth must be positive")
    length = max(1.0, mean_acceptance_length)
    ceiling = bandwidth_bytes_s / weights_bytes * length
    return Roofline(bandwidth_bytes_s, bandwidth_source, weights_bytes, length, ceiling, achieved_tps)


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
) -> Roofline | None:
    """The ceiling from a launch log and the GPU, or None when the weights or bandwidth are unknown."""
    weights = weights_bytes_from_log(lines)
    bw = bandwidth_for(gpu_name, readings)
    if weights is None or bw is None:
        return None
    return decode_ceiling(
        weights_bytes=weights,
        bandwidth_bytes_s=bw[0],
        mean_acceptance_length=mean_acceptance_length or 1.0,
        achieved_tps=achieved_tps,
        bandwidth_source=bw[1],
    )
