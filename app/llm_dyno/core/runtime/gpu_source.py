"""Which GPUs a server uses, and where the dashboard reads them: this machine's NVML or its container.

A profile names its GPUs in ``gpus``. A list is exactly the GPUs the server is given. ``all`` lets it
see every GPU, of which vLLM uses the first ``--tensor-parallel-size`` (1 without the flag), so
those are the ones watched, not every card in the box. No ``gpus`` means no GPU (the CPU demo, or a
container without GPU access): nothing to watch.

NVML sees only this machine's GPUs. A Docker profile whose engine is another machine (``tcp://`` or
``ssh://`` to another host, or a docker context that points at one; see
:func:`~llm_dyno.core.runtime.docker_spec.remote_engine_host`) is read with ``nvidia-smi`` inside its
container instead, where the GPUs it was given are numbered from 0 in the order given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.docker_spec import container_name, remote_engine_host
from llm_dyno.core.telemetry.attach import AttachedServer

NO_GPU_REASON = "the profile requests no GPU (set gpus: in the profile to watch one)"
NO_GPU_INDEX_REASON = "no GPU index given"


def gpu_label(gpus: tuple[int, ...]) -> str:
    """How the watched GPUs are named to the user: ``GPU 0``, ``GPU 1+2``."""
    return "GPU " + "+".join(str(g) for g in gpus)


@dataclass(frozen=True)
class GpuSource:
    """The GPUs a dashboard watches and how it reads them.

    ``gpus`` are the indices the reader uses: NVML's on this machine, or nvidia-smi's inside
    ``container`` (None: every GPU the container shows). ``server_gpus`` are the same GPUs as the
    user's profile numbers them (what :attr:`label` shows). ``machine`` is the remote host of a
    container on another machine.
    """

    gpus: tuple[int, ...] | None
    server_gpus: tuple[int, ...]
    container: str | None = None
    docker_host: str | None = None
    machine: str | None = None

    @classmethod
    def local(cls, gpus: tuple[int, ...]) -> GpuSource:
        """This machine's GPUs ``gpus``, read through NVML."""
        return cls(tuple(gpus), tuple(gpus))

    @property
    def label(self) -> str:
        """``GPU 1+2``: the watched GPUs in the profile's numbering."""
        return gpu_label(self.server_gpus)

    @property
    def through_container(self) -> bool:
        """Read with nvidia-smi in the container (not NVML)."""
        return self.container is not None

    @property
    def where(self) -> str:
        """Where the readings come from, for messages (``container x on gpu-box``, ``this machine``)."""
        if self.container is None:
            return "this machine"
        return f"container {self.container}" + (f" on {self.machine}" if self.machine else "")


def plan_gpus(plan: LaunchPlan) -> tuple[int, ...]:
    """The GPUs (this machine's or the Docker host's numbering) a planned server runs on; () for none."""
    gpus = plan.profile.gpus
    if gpus is None:
        return ()
    if gpus == "all":
        return tuple(range(plan.engine.tensor_parallel_size or 1))
    return tuple(gpus)


def plan_gpu_source(plan: LaunchPlan, environ: Mapping[str, str] | None = None) -> GpuSource | None:
    """Where to read a planned server's GPUs; None when it uses none (say :data:`NO_GPU_REASON`)."""
    gpus = plan_gpus(plan)
    if not gpus:
        return None
    docker = plan.profile.docker if plan.runtime == "docker" else None
    machine = remote_engine_host(docker.host, environ) if docker is not None else None
    if docker is None or machine is None:
        return GpuSource.local(gpus)
    # In the container a list of GPUs is renumbered 0..n-1 and all of them are the server's; with
    # `all` the container sees every GPU under its own index.
    inside = gpus if plan.profile.gpus == "all" else None
    return GpuSource(inside, gpus, container_name(plan.profile), docker.host, machine)


def attached_gpu_source(server: AttachedServer, *, nvml_reason: str | None) -> GpuSource | None:
    """Where to read an attached server's GPU; None without a GPU index (say :data:`NO_GPU_INDEX_REASON`).

    Through its container when one is named and the user asked for it, or when NVML cannot be used
    here (``nvml_reason``); else this machine's GPU ``gpu_index``. In the container the index is
    nvidia-smi's numbering there (0 for a container given one GPU).
    """
    if server.gpu_index is None:
        return None
    gpus = (server.gpu_index,)
    if server.container and (server.gpu_via_container or nvml_reason is not None):
        return GpuSource(gpus, gpus, server.container)
    return GpuSource.local(gpus)
