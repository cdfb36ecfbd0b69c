"""GPU readings for a server on a remote Docker host, from ``nvidia-smi`` inside its container.

NVML sees only local GPUs, so for a profile on another host the app runs ``nvidia-smi --query-gpu``
through ``docker exec`` and parses the CSV into the same :class:`GpuReading` as local NVML readings.
``[N/A]`` and ``[Not Supported]`` become None. nvidia-smi has no energy counter or bus width, so
those stay None. :class:`ContainerGpuSampler` does this periodically and emits the same
:class:`~llm_dyno.core.telemetry.nvml.GpuSample` records as the local NVML sampler.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.nvml import GpuReading, GpuSample
from llm_dyno.core.telemetry.sampler import PeriodicSampler

QUERY_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "driver_version",
    "power.draw", "power.limit", "power.default_limit", "power.min_limit", "power.max_limit",
    "enforced.power.limit",
    "utilization.gpu", "utilization.memory", "memory.used", "memory.total", "temperature.gpu",
    "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
    "clocks_event_reasons.active",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "fan.speed",
)  # fmt: skip
# Drivers before 535 know the reasons only by their old name.
_OLD_REASON_FIELD = "clocks_throttle_reasons.active"
_MIB = 1024 * 1024

ExecRun = Callable[[list[str]], Any]
"""``container.exec_run``-like: takes the argument list, returns ``(exit_code, output)`` (bytes or
text; :func:`~llm_dyno.core.runtime.stream_bounds.exec_output` reads it within bounds)."""


class RemoteGpuError(DynoError):
    """nvidia-smi could not be run in the container or its output was not understood."""


def smi_command(fields: Sequence[str] = QUERY_FIELDS) -> list[str]:
    """The nvidia-smi argument list (no shell) for a CSV query of ``fields``."""
    return ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]


def _missing(value: str) -> bool:
    v = value.strip()
    return not v or (v.startswith("[") and v.endswith("]")) or v in {"N/A", "Not Supported"}


def _float(value: str) -> float | None:
    return None if _missing(value) else float(value)


def _int(value: str) -> int | None:
    # hex for the reason mask ("0x0000000000000004"), decimal elsewhere
    return None if _missing(value) else int(value.strip(), 0)


def _str(value: str) -> str | None:
    return None if _missing(value) else value.strip()


def _mib(value: str) -> int | None:
    v = _float(value)
    return None if v is None else int(v * _MIB)


def parse_smi_csv(text: str, taken_at: float | None = None) -> tuple[GpuReading, ...]:
    """Parse ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`` output."""
    now = time.monotonic() if taken_at is None else taken_at
    readings: list[GpuReading] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(QUERY_FIELDS):
            raise RemoteGpuError(
                f"nvidia-smi line {lineno} has {len(cells)} fields, expected {len(QUERY_FIELDS)}: {line!r}"
            )
        v = dict(zip(QUERY_FIELDS, cells, strict=True))
        try:
            readings.append(
                GpuReading(
                    index=int(v["index"]),
                    taken_at=now,
                    source="nvidia-smi",
                    name=_str(v["name"]),
                    uuid=_str(v["uuid"]),
                    driver=_str(v["driver_version"]),
                    power_w=_float(v["power.draw"]),
                    power_limit_w=_float(v["power.limit"]),
                    default_limit_w=_float(v["power.default_limit"]),
                    min_limit_w=_float(v["power.min_limit"]),
                    max_limit_w=_float(v["power.max_limit"]),
                    enforced_limit_w=_float(v["enforced.power.limit"]),
                    util_gpu_pct=_float(v["utilization.gpu"]),
                    util_mem_pct=_float(v["utilization.memory"]),
                    mem_used_bytes=_mib(v["memory.used"]),
                    mem_total_bytes=_mib(v["memory.total"]),
                    temperature_c=_float(v["temperature.gpu"]),
                    sm_clock_mhz=_int(v["clocks.sm"]),
                    mem_clock_mhz=_int(v["clocks.mem"]),
                    max_sm_clock_mhz=_int(v["clocks.max.sm"]),
                    max_mem_clock_mhz=_int(v["clocks.max.mem"]),
                    throttle_mask=_int(v["clocks_event_reasons.active"]),
                    pcie_gen=_int(v["pcie.link.gen.current"]),
                    pcie_gen_max=_int(v["pcie.link.gen.max"]),
                    pcie_width=_int(v["pcie.link.width.current"]),
                    pcie_width_max=_int(v["pcie.link.width.max"]),
                    fan_pct=_float(v["fan.speed"]),
                )
            )
        except ValueError as exc:
            raise RemoteGpuError(f"nvidia-smi line {lineno}: unexpected value ({exc}): {line!r}") from exc
    return tuple(readings)


def _run(exec_run: ExecRun, cmd: list[str]) -> tuple[int, str]:
    result = exec_run(cmd)
    code, output = result[0], result[1]
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    return int(code if code is not None else 0), text


def read_remote_gpus(exec_run: ExecRun, *, container: str = "container") -> tuple[GpuReading, ...]:
    """Run nvidia-smi through ``exec_run`` (e.g. ``docker_container.exec_run``) and parse it."""
    cmd = smi_command()
    code, text = _run(exec_run, cmd)
    if code != 0 and "clocks_event_reasons" in text:  # older driver: retry with the old field name
        fields = tuple(_OLD_REASON_FIELD if f == "clocks_event_reasons.active" else f for f in QUERY_FIELDS)
        code, text = _run(exec_run, smi_command(fields))
    if code != 0:
        raise RemoteGpuError(
            f"nvidia-smi failed in {container} (exit {code}): {text.strip()[:300]}",
            hint="does the container have GPU access (--gpus / device_requests) and nvidia-smi?",
        )
    return parse_smi_csv(text)


def select_gpus(readings: Sequence[GpuReading], gpus: tuple[int, ...] | None, *, where: str) -> GpuSample:
    """A sample of the readings of ``gpus`` (None: all of them), or an error naming ``where`` when
    one of them is not among the readings."""
    if gpus is not None:
        shown = {r.index for r in readings}
        missing = [i for i in gpus if i not in shown]
        if missing:
            listing = ", ".join(str(i) for i in sorted(shown)) or "none"
            wanted = ", ".join(str(i) for i in missing)
            return GpuSample(time.monotonic(), (), error=f"{where} shows GPU {listing}, not GPU {wanted}")
        readings = [r for r in readings if r.index in gpus]
    return GpuSample(time.monotonic(), tuple(readings))


class ContainerGpuSampler(PeriodicSampler[GpuSample]):
    """Read a container's GPUs with ``nvidia-smi`` through ``docker exec`` every ``interval_s`` seconds.

    For a server on another machine, where this machine's NVML sees nothing. ``host`` is the
    container's engine as in a profile's ``docker.host`` (None: DOCKER_HOST / the active context).
    ``gpus`` are indices as nvidia-smi numbers them *inside* the container (0.. for the GPUs it was
    given); None keeps every GPU it shows. Failures (engine unreachable, container gone or stopped,
    no nvidia-smi) come as samples whose ``error`` names the container, never as exceptions; the
    connection is made again at the next tick.
    """

    def __init__(
        self,
        sink: Callable[[GpuSample], None],
        *,
        container: str,
        host: str | None = None,
        gpus: tuple[int, ...] | None = None,
        interval_s: float = 1.0,
        max_samples: int | None = None,
    ) -> None:
        self.container = container
        self.host = host
        self._gpus = gpus
        self._client: Any = None
        self._container: Any = None
        super().__init__(
            self._read_once, sink, interval_s=interval_s, name="container-gpu", max_samples=max_samples
        )

    @property
    def gpus(self) -> tuple[int, ...] | None:
        """The container's GPU indices kept at each tick (None: every GPU it shows)."""
        return self._gpus

    def _where(self) -> str:
        return f"container {self.container}" + (f" on {self.host}" if self.host else "")

    def _read_once(self) -> GpuSample:
        import docker.errors  # here, so that reading nvidia-smi output needs no docker-py

        from llm_dyno.core.runtime.docker_errors import connect
        from llm_dyno.core.runtime.stream_bounds import exec_bounds, exec_output

        try:
            if self._container is None:
                self._client = self._client or connect(self.host)
                self._container = self._client.containers.get(self.container)
            api, container_id, where = self._client.api, str(self._container.id), self._where()
            # the output read within bounds (size, total time): an engine that drips or never ends
            # the answer ends this reading with its error, never holds the sampler
            bounds = exec_bounds(f"nvidia-smi in {where}")
            readings = read_remote_gpus(
                lambda cmd: exec_output(api, container_id, cmd, bounds), container=where
            )
        except DynoError as exc:  # unreachable engine, nvidia-smi failed or unreadable
            self._forget(drop_client=not isinstance(exc, RemoteGpuError))
            return GpuSample(time.monotonic(), (), error=exc.message)
        except docker.errors.NotFound:
            self._forget(drop_client=False)
            return GpuSample(time.monotonic(), (), error=f"no {self._where()}: is the server running?")
        except Exception as exc:  # e.g. APIError 409 (container stopped), a broken connection
            self._forget(drop_client=True)
            return GpuSample(time.monotonic(), (), error=f"cannot read the GPUs of {self._where()}: {exc}")
        return select_gpus(readings, self._gpus, where=self._where())

    def _forget(self, *, drop_client: bool) -> None:
        self._container = None
        if drop_client and self._client is not None:
            client, self._client = self._client, None
            from llm_dyno.core.runtime.docker_errors import close_client

            close_client(client)

    def stop(self, timeout_s: float | None = 10.0) -> None:
        """Stop sampling and close the Docker connection once the thread has ended."""
        super().stop(timeout_s)
        if not self.running:
            self._forget(drop_client=True)
