"""GPU readings during a benchmark run: energy from the counter, power sampled at ~10 Hz in a thread,
the instantaneous power field alone at 40 Hz in another (for the peak).

The reader is injected (NVML in production, ``None`` where no GPU is visible, a fake in tests), so this
module never touches NVML itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from llm_dyno.core.bench.run_readings import EnergyStats, ThermalState
from llm_dyno.core.telemetry.nvml import GpuReading

# NVML in production; a fake in tests; None where no GPU is visible
GpuReader = Callable[[], GpuReading]
# the instantaneous power field alone (W; None where the driver lacks it): one cheap NVML call
InstantPowerReader = Callable[[], "float | None"]


PEAK_INSTANT = "instantaneous (NVML field)"
PEAK_AVERAGED = "peak of 1 s averages"
MEAN_FROM_ENERGY = "energy counter / time"
MEAN_SAMPLED = "mean of sampled 1 s averages"
# The H200's instantaneous field changes every ~100 ms: read at 10 Hz the sampler missed one 100 ms
# spike (749 vs 787 W); at 40 Hz every value is seen at least twice.
INSTANT_INTERVAL_S = 0.025


def _on_deadlines(
    stop: threading.Event, interval_s: float, clock: Callable[[], float], take: Callable[[], None]
) -> None:
    """Call ``take`` on the grid ``start + n × interval`` until ``stop``; an overrun skips the missed
    slots (sleeping a full interval after each read would run slower than the nominal rate)."""
    next_at = clock() + interval_s
    while not stop.wait(max(0.0, next_at - clock())):
        take()
        next_at += interval_s
        now = clock()
        if next_at < now:
            next_at = now + interval_s - ((now - next_at) % interval_s)


class RunSampler:
    """Samples a GPU reader in a daemon thread from :meth:`start` to :meth:`stop`.

    Readings are taken on a deadline grid (``start + n × interval``), not "read, then sleep": an NVML
    read takes ~6 ms (up to 17 ms on an H200), and sleeping a full interval after each would run a
    10 Hz sampler at 9.2–9.4 Hz. A read that overruns its slot skips the missed slots.

    Mean power comes from the energy counter over the run (the driver's ``power_w`` is a 1-second
    average that lags load changes); the mean of the sampled averages is kept under its own name.
    Peak power is the instantaneous field's where the driver has it, else the peak of 1 s averages,
    and says which. The instantaneous field is polled on its own, faster than it changes
    (``instant_interval_s``, one field-values call each), by ``instant`` or, when not given, the
    reader's own ``instant_power_w`` method where it has one.
    """

    def __init__(
        self,
        reader: GpuReader,
        interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        *,
        instant: InstantPowerReader | None = None,
        instant_interval_s: float = INSTANT_INTERVAL_S,
    ) -> None:
        self._reader = reader
        self._interval = interval_s
        self._clock = clock
        self._instant_reader: InstantPowerReader | None = (
            instant if instant is not None else getattr(reader, "instant_power_w", None)
        )
        self._instant_interval = instant_interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-gpu-sampler", daemon=True)
        self._fast = threading.Thread(target=self._fast_loop, name="bench-gpu-instant", daemon=True)
        self._power: list[float] = []
        self._instant: list[float] = []
        self._temps: list[float] = []
        self._reasons: set[str] = set()
        self._first_energy: tuple[float, float] | None = None  # (time, joules)
        self._last_energy: tuple[float, float] | None = None
        self.start_temperature_c: float | None = None  # the first reading's, as the run began
        self.read_times: list[float] = []  # when each reading was taken (for the sampling rate)
        self.instant_times: list[float] = []  # when each fast instantaneous reading was taken

    def _take(self) -> None:
        try:
            reading = self._reader()
        except Exception:  # a flaky reading must not fail the benchmark: skip the sample
            return
        now = self._clock()  # right after the reading, whose last value is the energy counter
        self.read_times.append(now)
        if reading.power_w is not None:
            self._power.append(float(reading.power_w))
        if reading.power_instant_w is not None:
            self._instant.append(float(reading.power_instant_w))
        if reading.temperature_c is not None:
            if not self._temps:
                self.start_temperature_c = float(reading.temperature_c)
            self._temps.append(float(reading.temperature_c))
        self._reasons.update(reading.throttle_reasons)
        if reading.energy_j is not None:
            if self._first_energy is None:
                self._first_energy = (now, float(reading.energy_j))
            self._last_energy = (now, float(reading.energy_j))

    def _take_instant(self, read: InstantPowerReader) -> None:
        try:
            watts = read()
        except Exception:  # as for a full reading: skip it
            return
        if watts is None:
            return
        self.instant_times.append(self._clock())
        self._instant.append(float(watts))  # list.append is atomic: the two threads may both append

    def _loop(self) -> None:
        _on_deadlines(self._stop, self._interval, self._clock, self._take)

    def _fast_loop(self) -> None:
        read = self._instant_reader
        if read is not None:
            _on_deadlines(self._stop, self._instant_interval, self._clock, lambda: self._take_instant(read))

    def start(self) -> None:
        """Take the first reading synchronously (the energy baseline), then sample in the thread."""
        self._take()
        self._thread.start()
        if self._instant_reader is not None:
            self._fast.start()

    def stop(self, completion_tokens: int) -> EnergyStats:
        """Stop sampling, take a final reading and summarise."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        if self._fast.is_alive():
            self._fast.join(timeout=2.0)
        self._take()
        energy = span = None
        if self._first_energy is not None and self._last_energy is not None:
            span = self._last_energy[0] - self._first_energy[0]
            energy = self._last_energy[1] - self._first_energy[1]
        sampled = sum(self._power) / len(self._power) if self._power else None
        mean, mean_source = (
            (energy / span, MEAN_FROM_ENERGY) if energy is not None and span else (sampled, MEAN_SAMPLED)
        )
        peak, peak_source = (
            (max(self._instant), PEAK_INSTANT) if self._instant
            else (max(self._power), PEAK_AVERAGED) if self._power
            else (None, "")
        )  # fmt: skip
        return EnergyStats(
            energy_j=energy,
            tokens_per_j=completion_tokens / energy if energy else None,
            mean_power_w=mean,
            peak_power_w=peak,
            max_temperature_c=max(self._temps) if self._temps else None,
            throttle_reasons=tuple(sorted(self._reasons)),
            samples=len(self._power),
            sampled_mean_power_w=sampled,
            mean_power_source=mean_source if mean is not None else "",
            peak_power_source=peak_source,
            span_s=span,
        )


def settle_temperature(
    reader: GpuReader,
    *,
    tolerance_c: float = 1.0,
    window_s: float = 10.0,
    timeout_s: float = 120.0,
    interval_s: float = 1.0,
    cancel: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ThermalState:
    """:func:`wait_for_stable_temperature`, reported as the state the runs then start from."""
    start = clock()
    stable = wait_for_stable_temperature(
        reader, tolerance_c=tolerance_c, window_s=window_s, timeout_s=timeout_s, interval_s=interval_s,
        cancel=cancel, clock=clock,
    )  # fmt: skip
    try:
        temp = reader().temperature_c
    except Exception:  # an unreadable GPU: the state is unknown, the runs go on
        temp = None
    if temp is None:
        return ThermalState(stable=None, note="GPU temperature not readable: thermal state unknown")
    note = (
        "" if stable else f"did not settle within ±{tolerance_c:g} °C over {window_s:g} s in {timeout_s:g} s"
    )
    return ThermalState(stable=stable, settled_c=float(temp), waited_s=clock() - start, note=note)


def wait_for_stable_temperature(
    reader: GpuReader,
    *,
    tolerance_c: float = 1.0,
    window_s: float = 10.0,
    timeout_s: float = 120.0,
    interval_s: float = 1.0,
    cancel: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Wait until the temperature varies by at most ``tolerance_c`` over ``window_s``.

    Returns ``True`` when stable, ``False`` on timeout, cancellation, or when no temperature is readable.
    """
    start = clock()
    history: list[tuple[float, float]] = []
    wait = cancel or threading.Event()
    while clock() - start < timeout_s:
        try:
            temp = reader().temperature_c
        except Exception:
            return False
        if temp is None:
            return False
        now = clock()
        history.append((now, float(temp)))
        # keep one reading at or before the window's start: with readings a little more than
        # interval_s apart the window would otherwise never span window_s (and never be "stable")
        while len(history) > 1 and now - history[1][0] >= window_s:
            history.pop(0)
        values = [v for _, v in history]
        if now - history[0][0] >= window_s and max(values) - min(values) <= tolerance_c:
            return True
        if wait.wait(interval_s):
            return False
    return False
