"""One reader of this machine's GPUs through NVML, as a benchmark and the dashboard read them.

A server on several GPUs is one server: its reading sums power, energy and limits, takes the hottest
temperature, averages utilisation and clocks, and joins the throttle reasons, so a benchmark's energy
per run is the whole server's. The instantaneous power field is read on its own as well, cheaply, for
a sampler that polls it faster than the full reading.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.nvml import GpuReading, GpuSample, GpuSampler, Nvml, nvml


def combine(readings: Sequence[GpuReading]) -> GpuReading:
    """One reading for a server on several GPUs (see the module docstring)."""
    if len(readings) == 1:
        return readings[0]
    first = readings[0]

    def total(name: str) -> float | None:
        values = [getattr(r, name) for r in readings]
        return None if any(v is None for v in values) else float(sum(values))

    def mean(name: str) -> float | None:
        values = [getattr(r, name) for r in readings if getattr(r, name) is not None]
        return sum(values) / len(values) if values else None

    def top(name: str) -> float | None:
        values = [getattr(r, name) for r in readings if getattr(r, name) is not None]
        return max(values) if values else None

    masks = [r.throttle_mask for r in readings if r.throttle_mask is not None]
    mask = 0
    for m in masks:
        mask |= m
    sm = mean("sm_clock_mhz")
    return dataclasses.replace(
        first,
        name=" + ".join(sorted({r.name or "?" for r in readings}))
        if len({r.name for r in readings}) > 1
        else first.name,
        power_w=total("power_w"),
        power_instant_w=total("power_instant_w"),
        energy_j=total("energy_j"),
        power_limit_w=total("power_limit_w"),
        enforced_limit_w=total("enforced_limit_w"),
        temperature_c=top("temperature_c"),
        util_gpu_pct=mean("util_gpu_pct"),
        util_mem_pct=mean("util_mem_pct"),
        sm_clock_mhz=None if sm is None else round(sm),
        throttle_mask=mask if masks else None,
    )


def sample_reading(sample: GpuSample) -> GpuReading:
    """The sample's readings as one (:func:`combine`); :class:`DynoError` for a failed sample."""
    if sample.error is not None or not sample.readings:
        raise DynoError(sample.error or "no GPU reading")
    return combine(sample.readings)


class LocalGpuReader:
    """This machine's GPUs through NVML: called, one combined reading; :meth:`instant_power_w`, the
    instantaneous power alone, which the benchmark's sampler polls faster than the full reading."""

    def __init__(self, gpus: tuple[int, ...] | None, session: Nvml | None = None) -> None:
        self._nvml = session or nvml()
        self._sampler = GpuSampler(lambda _s: None, gpus=gpus, session=self._nvml)

    def __call__(self) -> GpuReading:
        return sample_reading(self._sampler.read_now())

    def instant_power_w(self) -> float | None:
        """The GPUs' summed instantaneous power (W); None where any lacks the field."""
        gpus = self._sampler.gpus
        indices = gpus if gpus is not None else tuple(range(self._nvml.device_count()))
        total = 0.0
        for i in indices:
            watts = self._nvml.instant_power_w(i)
            if watts is None:
                return None
            total += watts
        return total
