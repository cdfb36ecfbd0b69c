"""The dashboard's Roofline figure: live generation tok/s as a share of the physical decode ceiling.

The ceiling needs the weights in VRAM (the server's ``Model loading took X GiB`` log line) and the
GPU's memory bandwidth (an NVML reading, or a known GPU name); without either the figure reads "n/a"
and its tooltip says what is missing. See :mod:`llm_dyno.core.diagnose.roofline` for the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from llm_dyno.core.bench.ceiling import missing_inputs
from llm_dyno.core.diagnose.roofline import GIB, bandwidth_for, decode_ceiling, weights_bytes_from_log
from llm_dyno.core.telemetry.nvml import GpuReading


@dataclass
class RooflineInputs:
    """What the figure needs, gathered as it arrives (log lines, GPU samples, an attached GPU's name)."""

    weights_bytes: float | None = None
    gpu_name: str | None = None
    readings: Sequence[GpuReading] = field(default_factory=tuple)

    def feed_lines(self, lines: Iterable[str]) -> None:
        """Take the model size from a ``Model loading took`` line among ``lines`` (the last one wins)."""
        found = weights_bytes_from_log(lines)
        if found is not None:
            self.weights_bytes = found

    def feed_reading(self, reading: GpuReading) -> None:
        """Keep the latest GPU reading (its name and memory clock × bus width)."""
        self.readings = (reading,)
        if reading.name:
            self.gpu_name = reading.name

    def figure(self, gen_tps: float | None, mean_acceptance_length: float | None) -> tuple[str, str]:
        """(text, tooltip): ``"34 %"`` of the ceiling, or ``"n/a"`` with what is missing."""
        bandwidth = bandwidth_for(self.gpu_name, self.readings)
        missing = missing_inputs(self.weights_bytes, bandwidth)
        if missing is not None or self.weights_bytes is None or bandwidth is None:
            return "n/a", f"Roofline {missing}"
        r = decode_ceiling(
            weights_bytes=self.weights_bytes,
            bandwidth_bytes_s=bandwidth[0],
            mean_acceptance_length=mean_acceptance_length or 1.0,
            achieved_tps=gen_tps,
            bandwidth_source=bandwidth[1],
        )
        tip = (
            f"Generation tok/s as a share of the decode ceiling\n"
            f"ceiling {r.ceiling_tps:,.1f} tok/s = {r.bandwidth_bytes_s / 1e9:,.0f} GB/s "
            f"({r.bandwidth_source}) / {r.weights_bytes / GIB:.2f} GiB weights "
            f"× {r.mean_acceptance_length:.2f} tokens per pass"
        )
        share = r.achieved_share
        if share is None:
            return "—", tip
        return f"{share * 100:.0f} %", tip
