"""vLLM's sleep mode: is it there, put a server to sleep, wake it, and what that freed and took.

A profile with ``sleep_mode: true`` launches with ``--enable-sleep-mode`` and ``VLLM_SERVER_DEV_MODE=1``
(the sleep endpoints are dev routes: vLLM mounts them only with that variable; see
``vllm/entrypoints/launchers/api_server/routers.py`` in vLLM 0.32). The endpoints, as
``vllm/entrypoints/serve/dev/sleep/api_router.py`` defines them:

- ``POST /sleep?level=N&mode=M`` → ``{"status": "sleeping", "level": N}``; ``mode`` says what happens
  to requests in flight (``abort``, vLLM's default; ``wait`` for them to finish; ``keep``). Requests
  are never cut here: this client always sends ``mode=wait``.
- ``POST /wake_up[?tags=weights|kv_cache]`` → ``{"status": "awake" | "sleeping", "tags": …}``.
- ``GET /is_sleeping`` → ``{"is_sleeping": bool}``.

Level 1 keeps the weights in host RAM; level 2 discards them, so a level-2 wake is, as vLLM's
sleep-mode docs give it: ``wake_up?tags=weights``, ``POST /collective_rpc {"method": "reload_weights"}``,
then ``wake_up?tags=kv_cache``.

Sleep mode exists only where vLLM's platform has it (``is_sleep_mode_available()``: CUDA, ROCm, XPU;
``config/model.py`` refuses ``--enable-sleep-mode`` elsewhere), so vLLM for CPU has none.
:mod:`~llm_dyno.core.runtime.sleep_support` asks a process profile's own Python; a Docker image is
assumed to be a CUDA build and the server's answer tells.

What a sleep freed (GPU memory used before and after, from NVML where this machine reads the
server's GPUs; "unknown" otherwise) and how long each wake took are kept in the registry folder beside
the server's record: ``<key>.sleep.json`` (:class:`SleepRecord`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.httpbounds import SMALL_LIMIT, BoundsError, read_body, send_bounded
from llm_dyno.core.httpclient import http_client
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.registry_files import server_key, servers_dir
from llm_dyno.core.runtime.sleep_support import DEV_MODE_ENV, SLEEP_FLAG, SleepError, sleep_enabled

SLEEP_DEADLINE_S = 300.0  # a level-1 sleep copies every weight to host RAM
WAKE_DEADLINE_S = 600.0  # a level-2 wake reloads the weights from disk
STATE_DEADLINE_S = 10.0
MAX_WAKES_KEPT = 20

__all__ = ["SleepError", "sleep_enabled"]  # (from sleep_support: what callers of the client catch and ask)


# ---- what is kept of a server's sleeps ---------------------------------------------------------
@dataclass(frozen=True)
class SleepRecord:
    """A server's sleep state as this app left it: asleep at ``level`` since ``slept_at`` (None:
    awake), the GPU memory the last sleep freed (None: unknown), and the last wakes' seconds."""

    profile_name: str
    url: str
    level: int | None = None
    slept_at: float | None = None
    freed_bytes: int | None = None
    sleep_s: float | None = None
    wakes_s: tuple[float, ...] = field(default=())

    @property
    def state(self) -> str | None:
        """``sleeping (level 1)`` while asleep, else None."""
        return f"sleeping (level {self.level})" if self.level is not None else None

    def to_json(self) -> str:
        """The file's text."""
        data = asdict(self)
        data["wakes_s"] = list(self.wakes_s)
        return json.dumps(data, indent=1)

    @staticmethod
    def from_json(text: str) -> SleepRecord:
        """Read a record; ValueError when it is not one."""
        data = loads_outside(text, "the sleep record")
        if not isinstance(data, dict):
            raise ValueError("not a sleep record")

        def number(key: str) -> float | None:
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            return None

        level = data.get("level")
        freed = data.get("freed_bytes")
        wakes = data.get("wakes_s")
        return SleepRecord(
            profile_name=str(data.get("profile_name") or ""),
            url=str(data.get("url") or ""),
            level=level if level in (1, 2) else None,
            slept_at=number("slept_at"),
            freed_bytes=freed if isinstance(freed, int) and not isinstance(freed, bool) else None,
            sleep_s=number("sleep_s"),
            wakes_s=tuple(float(w) for w in wakes if isinstance(w, (int, float)))
            if isinstance(wakes, list)
            else (),
        )


def record_path(profile_name: str) -> Path:
    """Where a server's sleep record is kept (beside its registry record)."""
    return servers_dir() / f"{server_key(profile_name)}.sleep.json"


def record_at(profile_name: str, url: str) -> SleepRecord | None:
    """The sleep record of profile ``profile_name``'s server at ``url``, or None (none kept, or
    another server's at another URL)."""
    try:
        record = SleepRecord.from_json(record_path(profile_name).read_text())
    except (OSError, ValueError):
        return None
    return record if record.url == url else None


def read_record(plan: LaunchPlan) -> SleepRecord | None:
    """The plan's server's sleep record (:func:`record_at`)."""
    return record_at(plan.profile.name, plan.base_url)


def sleep_state(plan: LaunchPlan, started_at: float | None = None) -> str | None:
    """``sleeping (level 1)`` when this app put the plan's server (running since ``started_at``) to
    sleep and did not wake it; None otherwise (a server started after that sleep is another one)."""
    record = read_record(plan)
    if record is None or record.slept_at is None:
        return None
    return record.state if started_at is None or record.slept_at >= started_at else None


def _write(record: SleepRecord) -> None:
    path = record_path(record.profile_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, record.to_json())


# ---- the client --------------------------------------------------------------------------------
def _call(
    endpoint: Endpoint,
    method: str,
    path: str,
    *,
    params: list[tuple[str, str]] | None = None,
    body: dict[str, Any] | None = None,
    deadline_s: float,
) -> Any:
    """One bounded request to the server; its JSON answer (None for an empty body)."""
    import httpx

    url = endpoint.url + path
    try:
        with http_client(endpoint.url, api_key=endpoint.api_key(), timeout_s=deadline_s) as client:
            query: list[tuple[str, str | int | float | bool | None]] = list(params or [])
            request = client.build_request(method, path, params=query, json=body)
            started = time.monotonic()
            response = send_bounded(client, request, url=url, deadline_s=deadline_s, started=started)
            content = read_body(
                response,
                url,
                limit=SMALL_LIMIT,
                deadline_s=deadline_s,
                what=f"{path} answer",
                started=started,
            )
    except httpx.HTTPError as exc:
        raise SleepError(
            f"{endpoint.describe()}: {path} got no answer ({type(exc).__name__}: {exc})",
            hint="is the server running? `llm-dyno status` shows it",
        ) from None
    except BoundsError as exc:
        raise SleepError(exc.message, hint=exc.hint) from None
    if response.status_code == 404:
        raise SleepError(
            f"{endpoint.describe()} has no {path} endpoint (404): it was not launched with sleep mode",
            hint=f"set sleep_mode: true in the profile (it adds {SLEEP_FLAG} and {DEV_MODE_ENV}=1) "
            "and launch it again",
        )
    if response.status_code != 200:
        text = content[:300].decode("utf-8", "replace")
        raise SleepError(
            f"{endpoint.describe()}: {method} {path} answered HTTP {response.status_code}: {text}",
            hint="the server's log (`llm-dyno logs NAME`) says why",
        )
    if not content.strip():
        return None
    try:
        return loads_outside(content.decode("utf-8", "replace"), f"the {path} answer")
    except ValueError as exc:
        raise SleepError(f"{endpoint.describe()}: the {path} answer is not JSON ({exc})") from None


def is_sleeping(endpoint: Endpoint) -> bool:
    """The server's own answer to ``GET /is_sleeping``."""
    answer = _call(endpoint, "GET", "/is_sleeping", deadline_s=STATE_DEADLINE_S)
    if not isinstance(answer, dict) or not isinstance(answer.get("is_sleeping"), bool):
        raise SleepError(f"{endpoint.describe()}: /is_sleeping answered {str(answer)[:200]}, not vLLM's")
    return bool(answer["is_sleeping"])


MemoryReader = Callable[[], int | None]


def gpu_memory_reader(plan: LaunchPlan) -> MemoryReader:
    """The GPU memory in use on the plan's GPUs (bytes, summed), read through NVML on this machine;
    None when it cannot be read (no GPU, a remote engine, no driver): the freed memory is then unknown."""
    from llm_dyno.core.runtime.gpu_source import plan_gpu_source
    from llm_dyno.core.telemetry.nvml import GpuSampler

    source = plan_gpu_source(plan)
    if source is None or source.through_container:
        return lambda: None
    sampler = GpuSampler(lambda _s: None, gpus=source.gpus)

    def used() -> int | None:
        try:
            sample = sampler.read_now()
        except DynoError:
            return None
        values = [r.mem_used_bytes for r in sample.readings]
        if sample.error is not None or not values or any(v is None for v in values):
            return None
        return sum(v for v in values if v is not None)

    return used


def _settle(read: MemoryReader) -> int | None:
    time.sleep(0.5)  # the driver's figure trails the free by a moment
    return read()


@dataclass(frozen=True)
class WakeResult:
    """A wake: the seconds it took and the calls sent, in order."""

    wake_s: float
    calls: tuple[str, ...]
    record: SleepRecord


def sleep_server(plan: LaunchPlan, level: int = 1, *, read_memory: MemoryReader | None = None) -> SleepRecord:
    """Put the plan's server to sleep at ``level`` (1 or 2), letting requests in flight finish
    (``mode=wait``); keep and return what it freed and how long it took."""
    if level not in (1, 2):
        raise SleepError(f"sleep level {level}: vLLM's levels are 1 (weights to host RAM) and 2 (discarded)")
    endpoint = plan.endpoint
    read = read_memory or gpu_memory_reader(plan)
    before = read()
    started = time.monotonic()
    answer = _call(
        endpoint,
        "POST",
        "/sleep",
        params=[("level", str(level)), ("mode", "wait")],
        deadline_s=SLEEP_DEADLINE_S,
    )
    took = time.monotonic() - started
    if not isinstance(answer, dict) or answer.get("status") != "sleeping":
        raise SleepError(f"{endpoint.describe()}: /sleep answered {str(answer)[:200]}, not vLLM's")
    after = _settle(read) if before is not None else None
    freed = before - after if before is not None and after is not None else None
    kept = read_record(plan)
    record = SleepRecord(
        profile_name=plan.profile.name,
        url=plan.base_url,
        level=level,
        slept_at=time.time(),
        freed_bytes=freed,
        sleep_s=round(took, 3),
        wakes_s=kept.wakes_s if kept is not None else (),
    )
    _write(record)
    return record


def wake_server(plan: LaunchPlan) -> WakeResult:
    """Wake the plan's server: level 2 reloads its weights before the KV cache comes back; time it
    and keep the time. A server this app did not see asleep is asked (``/is_sleeping``) first."""
    endpoint = plan.endpoint
    kept = read_record(plan)
    if not is_sleeping(endpoint):  # the server's word: a record can be older than its server
        if kept is not None and kept.level is not None:
            _write(replace(kept, level=None, slept_at=None))
        raise SleepError(
            f"'{plan.profile.name}' is not sleeping", hint="`llm-dyno sleep NAME` puts it to sleep"
        )
    # the level is this app's record of the sleep (vLLM's /is_sleeping does not say it); one it did
    # not see is woken as level 1
    level = kept.level if kept is not None else None
    calls: list[str] = []
    started = time.monotonic()
    if level == 2:
        steps: list[tuple[str, list[tuple[str, str]] | None, dict[str, Any] | None]] = [
            ("/wake_up", [("tags", "weights")], None),
            ("/collective_rpc", None, {"method": "reload_weights"}),
            ("/wake_up", [("tags", "kv_cache")], None),
        ]
    else:
        steps = [("/wake_up", None, None)]
    answer: Any = None
    for path, params, body in steps:
        answer = _call(endpoint, "POST", path, params=params, body=body, deadline_s=WAKE_DEADLINE_S)
        calls.append(path + ("?" + "&".join(f"{k}={v}" for k, v in params) if params else ""))
    took = time.monotonic() - started
    if not isinstance(answer, dict) or answer.get("status") != "awake":
        raise SleepError(f"{endpoint.describe()}: the last wake_up answered {str(answer)[:200]}, not awake")
    base = kept or SleepRecord(profile_name=plan.profile.name, url=plan.base_url)
    record = replace(
        base, level=None, slept_at=None, wakes_s=(*base.wakes_s, round(took, 3))[-MAX_WAKES_KEPT:]
    )
    _write(record)
    return WakeResult(round(took, 3), tuple(calls), record)


def freed_text(record: SleepRecord) -> str:
    """``freed 20.1 GiB of GPU memory`` or ``GPU memory freed: unknown (…)``."""
    if record.freed_bytes is None:
        return "GPU memory freed: unknown (no GPU reading of this server here)"
    return f"freed {record.freed_bytes / 1024**3:.1f} GiB of GPU memory"
