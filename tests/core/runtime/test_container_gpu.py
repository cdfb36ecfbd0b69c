"""GPU readings through ``docker exec nvidia-smi`` in a real container on the local Docker engine.

The container's nvidia-smi replays CSV recorded on a real H200 (tests/support/images.py, SMI_IMAGE);
everything between the sampler and it is real: docker-py, the engine, exec, the CSV parser.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any

import pytest

from llm_dyno.core.runtime.remote_gpu import ContainerGpuSampler
from llm_dyno.core.telemetry.nvml import GpuSample

pytestmark = pytest.mark.docker


def take(n: int, **kwargs: Any) -> list[GpuSample]:
    """``n`` samples of a ContainerGpuSampler (stopped afterwards)."""
    got: queue.Queue[GpuSample] = queue.Queue()
    sampler = ContainerGpuSampler(got.put, interval_s=0.05, max_samples=n, **kwargs)
    with sampler:
        samples = [got.get(timeout=30) for _ in range(n)]
    assert not sampler.running
    return samples


def test_reads_every_gpu_of_the_container(smi_container: Callable[..., str]) -> None:
    name = smi_container("two", FAKE_SMI_GPUS="idle,load")
    samples = take(2, container=name)
    for s in samples:
        assert s.error is None
        idle, load = s.readings
        assert [r.index for r in s.readings] == [0, 1] and {r.source for r in s.readings} == {"nvidia-smi"}
        assert (idle.power_w, load.power_w) == (80.89, 688.73)  # the recorded H200 values
        assert (idle.temperature_c, load.temperature_c) == (36.0, 58.0)
        assert load.throttle_reasons == ("SwPowerCap",) and load.power_limit_w == 700.0
    assert samples[1].taken_at > samples[0].taken_at  # read at each tick, not cached


def test_keeps_only_the_asked_gpus(smi_container: Callable[..., str]) -> None:
    name = smi_container("pick", FAKE_SMI_GPUS="idle,load")
    (s,) = take(1, container=name, gpus=(1,))
    assert s.error is None and [(r.index, r.power_w) for r in s.readings] == [(1, 688.73)]
    (s,) = take(1, container=name, gpus=(0, 3))
    assert s.readings == () and s.error == f"container {name} shows GPU 0, 1, not GPU 3"


def test_container_without_nvidia_smi_is_an_error_sample(smi_container: Callable[..., str]) -> None:
    name = smi_container("nosmi", PATH="/nonexistent")
    samples = take(2, container=name)  # the thread goes on after a failure
    for s in samples:
        assert s.readings == ()
        assert s.error is not None and s.error.startswith(f"nvidia-smi failed in container {name} (exit ")
        assert "executable file not found" in s.error


def test_missing_or_stopped_container_names_it(docker_client: Any, smi_container: Callable[..., str]) -> None:
    (s,) = take(1, container="llm-dyno-no-such-container")
    assert s.error == "no container llm-dyno-no-such-container: is the server running?"
    name = smi_container("stopped")
    docker_client.containers.get(name).kill()
    (s,) = take(1, container=name)
    assert s.error is not None and s.error.startswith(f"cannot read the GPUs of container {name}: ")
    assert "is not running" in s.error


def test_unreachable_engine_is_an_error_sample() -> None:
    (s,) = take(1, container="x", host="tcp://127.0.0.1:9")
    assert s.error is not None and s.error.startswith("cannot reach tcp://127.0.0.1:9")
