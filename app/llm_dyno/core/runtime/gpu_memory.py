"""How much memory a GPU has: NVML on this machine, else a datasheet table keyed by GPU name.

The table holds the memory NVIDIA's datasheets give for each card (product pages and data sheets at
nvidia.com, as of 2026: H200 141 GB HBM3e, H100 SXM/PCIe 80 GB, H100 NVL 94 GB, A100 40/80 GB, L40S and
L40 48 GB, RTX 6000 Ada 48 GB, RTX A6000 48 GB, RTX 5090 32 GB, RTX 4090 / 3090 24 GB, ...). Datasheets
count in GB (10^9) for HBM cards and GiB-sized parts for GDDR cards (a "24 GB" RTX 3090 has 24 GiB); the
table stores what NVML reports where a real card was read (an H200: 150,754,820,096 bytes = 143,771 MiB,
in tests/fixtures/nvml/gpu_sampler.jsonl and from nvidia-smi on the lent H200), else the datasheet figure.
Names are matched as NVML spells them, lower-cased, without "NVIDIA" / "GeForce".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_dyno.core.telemetry.nvml import NvmlUnavailable, nvml

GIB = 1024**3

# (pattern, label, bytes); most specific first.
DATASHEET: tuple[tuple[str, str, int], ...] = (
    (r"h200", "H200 141 GB", 150_754_820_096),  # NVML on a real H200 (tests/fixtures/nvml)
    (r"h100 nvl", "H100 NVL 94 GB", 94 * 10**9),
    (r"h100", "H100 80 GB", 80 * GIB),
    (r"gh200", "GH200 96 GB", 96 * GIB),
    (r"a100.*40", "A100 40 GB", 40 * GIB),
    (r"a100", "A100 80 GB", 80 * GIB),
    (r"l40s", "L40S 48 GB", 48 * GIB),
    (r"\bl40\b", "L40 48 GB", 48 * GIB),
    (r"\bl4\b", "L4 24 GB", 24 * GIB),
    (r"\ba40\b", "A40 48 GB", 48 * GIB),
    (r"\ba10\b", "A10 24 GB", 24 * GIB),
    (r"rtx 6000 ada", "RTX 6000 Ada 48 GB", 48 * GIB),
    (r"rtx pro 6000", "RTX PRO 6000 Blackwell 96 GB", 96 * GIB),
    (r"rtx a6000", "RTX A6000 48 GB", 48 * GIB),
    (r"rtx 5090", "RTX 5090 32 GB", 32 * GIB),
    (r"rtx 5080", "RTX 5080 16 GB", 16 * GIB),
    (r"rtx 4090", "RTX 4090 24 GB", 24 * GIB),
    (r"rtx 4080", "RTX 4080 16 GB", 16 * GIB),
    (r"rtx 3090", "RTX 3090 24 GB", 24 * GIB),
    (r"rtx 3080 ti", "RTX 3080 Ti 12 GB", 12 * GIB),
    (r"rtx 3080", "RTX 3080 10 GB", 10 * GIB),
    (r"v100.*32", "V100 32 GB", 32 * GIB),
    (r"v100", "V100 16 GB", 16 * GIB),
    (r"\bt4\b", "T4 16 GB", 16 * GIB),
)
DATASHEET_SOURCE = "datasheet table (core/runtime/gpu_memory.py, NVIDIA product pages)"


@dataclass(frozen=True)
class GpuMemory:
    """A GPU's total memory in bytes, its name, and where the figure comes from."""

    total_bytes: int
    name: str
    source: str


def datasheet_memory(gpu_name: str) -> GpuMemory | None:
    """The table's entry for a GPU name (``NVIDIA GeForce RTX 3090``, ``h200``), or None."""
    name = re.sub(r"\b(nvidia|geforce)\b", " ", gpu_name.lower())
    name = re.sub(r"[-_]", " ", name)
    for pattern, label, total in DATASHEET:
        if re.search(pattern, name):
            return GpuMemory(total, label, DATASHEET_SOURCE)
    return None


def local_gpu_memory(index: int) -> tuple[GpuMemory | None, str]:
    """GPU ``index`` of this machine through NVML, or None and why not (no driver, no such GPU)."""
    try:
        reading = nvml().read(index)
    except NvmlUnavailable as exc:
        return None, exc.reason
    except Exception as exc:  # an NVML error for this index (NVMLError_InvalidArgument, ...)
        return None, f"GPU {index}: {type(exc).__name__}: {exc}"
    if reading.mem_total_bytes is None:
        return None, f"GPU {index}: NVML gives no memory total"
    return GpuMemory(reading.mem_total_bytes, reading.name or f"GPU {index}", f"NVML, GPU {index}"), ""
