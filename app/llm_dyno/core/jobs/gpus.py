"""The GPUs a job's server runs on, and one reader for them: NVML here, or nvidia-smi in its container.

A server on several GPUs is one server (see :mod:`llm_dyno.core.telemetry.gpu_reader`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llm_dyno.core.bench.gpu import GpuReader
from llm_dyno.core.errors import DynoError
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.gpu_source import NO_GPU_REASON, GpuSource, plan_gpu_source
from llm_dyno.core.telemetry.gpu_reader import LocalGpuReader, sample_reading
from llm_dyno.core.telemetry.nvml import GpuSample, GpuSampler

MAX_GPU_INDEX = 255  # no machine has more GPUs; a larger index is a typo or an attack (gpu-<301 digits>.lock)


def parse_gpu_index(text: str, flag: str = "--gpu") -> int:
    """A GPU index given by the user (``--gpu N``): a whole number 0..:data:`MAX_GPU_INDEX`;
    :class:`DynoError` naming ``flag`` and what it got (shortened) otherwise."""
    shown = text if len(text) <= 20 else f"{text[:20]}… ({len(text)} characters)"
    value = text.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 3 or int(value) > MAX_GPU_INDEX:
        raise DynoError(
            f"{flag} {shown}: a GPU index is a whole number from 0 to {MAX_GPU_INDEX}",
            hint="`llm-dyno power show` lists this machine's GPUs",
        )
    return int(value)


@dataclass(frozen=True)
class GpuPlan:
    """Which GPUs a job reads and where (``source``), or why it reads none (``reason``)."""

    source: GpuSource | None
    reason: str | None = None

    @property
    def label(self) -> str:
        """``GPU 0+1`` or ``no GPU``."""
        return self.source.label if self.source is not None else "no GPU"

    @property
    def local_gpus(self) -> tuple[int, ...]:
        """This machine's GPU indices a power control may change (none for a remote container)."""
        if self.source is None or self.source.through_container or self.source.gpus is None:
            return ()
        return self.source.gpus


def plan_gpus(plan: LaunchPlan) -> GpuPlan:
    """The GPUs of a planned (or launched) server."""
    source = plan_gpu_source(plan)
    return GpuPlan(source, None if source is not None else NO_GPU_REASON)


def gpu_sampler(source: GpuSource) -> Callable[[], GpuSample]:
    """One reading of each of the server's GPUs per call, taken in the calling thread (a failed reading
    is a sample with its ``error``)."""
    if source.through_container:
        from llm_dyno.core.runtime.remote_gpu import ContainerGpuSampler

        remote = ContainerGpuSampler(
            lambda _s: None, container=source.container or "", host=source.docker_host, gpus=source.gpus
        )
        return remote.read_now
    return GpuSampler(lambda _s: None, gpus=source.gpus).read_now


def gpu_reader(source: GpuSource) -> GpuReader:
    """A reader of the server's GPUs as one reading (raises :class:`DynoError` when a reading fails)."""
    if source.through_container:
        sample = gpu_sampler(source)
        return lambda: sample_reading(sample())
    return LocalGpuReader(source.gpus)
