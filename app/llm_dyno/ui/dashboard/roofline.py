"""The dashboard's Roofline figure: live generation tok/s as a share of the physical decode ceiling.

The ceiling needs the weights in VRAM (the server's ``Model loading took X GiB`` log line) and the
GPU's memory bandwidth (an NVML reading, or a known GPU name); without either the figure reads "n/a"
and its tooltip says what is missing. Tokens per pass come from the live mean acceptance length,
else from the log's SpecDecoding lines; where neither is known on a speculating server the tooltip
says 1 was assumed. A share above 100 % is never shown: the figure says which input is wrong. See
:mod:`llm_dyno.core.bench.roofline` for the model.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from llm_dyno.core.bench.ceiling import missing_inputs
from llm_dyno.core.bench.roofline import (
    bandwidth_for,
    decode_ceiling,
    speculative_tokens_from_log,
    tokens_per_pass,
    weights_bytes_from_log,
)
from llm_dyno.core.telemetry.nvml import GpuReading

_SPEC_LINES = 50  # the latest SpecDecoding lines kept (each covers one logging interval, ~10 s)


@dataclass
class RooflineInputs:
    """What the figure needs, gathered as it arrives (log lines, GPU samples, an attached GPU's name)."""

    weights_bytes: float | None = None
    gpu_name: str | None = None
    readings: Sequence[GpuReading] = field(default_factory=tuple)
    speculative_tokens: int | None = None  # from the engine's configuration line (0: none)
    spec_lines: deque[str] = field(default_factory=lambda: deque(maxlen=_SPEC_LINES))

    def feed_lines(self, lines: Iterable[str]) -> None:
        """Take the model size (the last ``Model loading took`` line wins), the speculative setting and
        the SpecDecoding lines from ``lines``."""
        lines = list(lines)
        found = weights_bytes_from_log(lines)
        if found is not None:
            self.weights_bytes = found
        k = speculative_tokens_from_log(lines)
        if k is not None:
            self.speculative_tokens = k
        self.spec_lines.extend(line for line in lines if "SpecDecoding metrics" in line)

    def feed_reading(self, reading: GpuReading) -> None:
        """Keep the latest GPU reading (its name and memory clock × bus width)."""
        self.readings = (reading,)
        if reading.name:
            self.gpu_name = reading.name

    def figure(
        self,
        gen_tps: float | None,
        mean_acceptance_length: float | None,
        running: float | None = None,
        read_bytes_per_s: float | None = None,
    ) -> tuple[str, str]:
        """(text, tooltip): ``"34 %"`` of the ceiling, ``"n/a"`` with what is missing, or ``"input?"``
        when the achieved rate is above the ceiling (the tooltip says which input is wrong).

        ``running`` requests decode in one pass each step; ``read_bytes_per_s`` is vLLM's own estimate
        (``--enable-mfu-metrics``), shown beside as a second ceiling.
        """
        bandwidth = bandwidth_for(self.gpu_name, self.readings)
        missing = missing_inputs(self.weights_bytes, bandwidth)
        if missing is not None or self.weights_bytes is None or bandwidth is None:
            return "n/a", f"Roofline {missing}"
        tokens = tokens_per_pass(
            mean_acceptance_length,
            self.spec_lines,
            measured_source="/metrics: live mean acceptance length",
            speculative_tokens=self.speculative_tokens,
        )
        per_token = read_bytes_per_s / gen_tps if read_bytes_per_s and gen_tps and gen_tps > 0 else None
        r = decode_ceiling(
            weights_bytes=self.weights_bytes,
            bandwidth_bytes_s=bandwidth[0],
            mean_acceptance_length=tokens.value,
            achieved_tps=gen_tps,
            bandwidth_source=bandwidth[1],
            tokens_source=tokens.source,
            tokens_assumed=tokens.assumed,
            batch=max(1, round(running or 1)),
            engine_bytes_per_token=per_token,
        )
        tip = "\n".join(
            ["Generation tok/s as a share of the decode ceiling", r.describe(), "Assumed:"]
            + [f"• {a}" for a in r.assumptions()]
        )
        if r.problem is not None:
            return "input?", tip
        share = r.plausible_share
        if share is None:
            return "—", tip
        return f"{share * 100:.0f} %", tip
