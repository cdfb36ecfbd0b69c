"""What one server takes on each of its GPUs: the record the GPU budget adds up (see :mod:`.gpu_budget`).

vLLM's ``--gpu-memory-utilization`` is the fraction of the *whole* GPU's memory that one vLLM server
may use in total (weights, activations, CUDA graphs and KV cache; vLLM pre-allocates the KV cache up to
it and refuses to start when less than that is free: ``Free memory on device ... is less than desired
GPU memory utilization``). Each server has its own share, so two servers at 0.9 on one GPU never fit.
A hold is kept in the launch plan and, for a process server, in its registry record, so that a later
launch (from any llm-dyno) counts what was planned when it was launched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuHold:
    """A server's share of each of its GPUs: ``fraction`` of the whole GPU (vLLM's
    ``--gpu-memory-utilization``) and, where the GPU's size is known, ``bytes_per_gpu``; ``source``
    says where the figure comes from (the estimate's, ``fraction × total``)."""

    gpus: tuple[int, ...]
    fraction: float
    bytes_per_gpu: int | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        """The record's ``gpu_hold`` object."""
        return {
            "gpus": list(self.gpus),
            "fraction": self.fraction,
            "bytes_per_gpu": self.bytes_per_gpu,
            "source": self.source,
        }

    @staticmethod
    def from_dict(data: object) -> GpuHold | None:
        """A hold read back from a record; None when it is missing or malformed (the budget then
        counts the server from its profile snapshot)."""
        if not isinstance(data, dict):
            return None
        gpus, fraction, nbytes = data.get("gpus"), data.get("fraction"), data.get("bytes_per_gpu")
        if not isinstance(gpus, list) or not all(type(g) is int and 0 <= g <= 255 for g in gpus):
            return None
        if not isinstance(fraction, int | float) or isinstance(fraction, bool) or not 0 < fraction <= 1:
            return None
        if nbytes is not None and (type(nbytes) is not int or nbytes < 0):
            return None
        return GpuHold(tuple(gpus), float(fraction), nbytes, str(data.get("source") or "recorded at launch"))
