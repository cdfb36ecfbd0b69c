"""The watch job's spec: what the dashboard and ``llm-dyno watch`` sample, resolved from the registry."""

from __future__ import annotations

from dataclasses import dataclass

from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.jobs.gpus import GpuPlan, plan_gpus
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.gpu_source import GpuSource
from llm_dyno.core.runtime.manager import ServerManager


@dataclass(frozen=True)
class WatchSpec:
    """The server to sample and its GPUs."""

    endpoint: Endpoint
    gpus: GpuPlan


def prepare_watch(
    target: Profile | Endpoint, *, gpu: int | None = None, registry: ServerManager | None = None
) -> WatchSpec:
    """A profile's server as the registry knows it (launched anywhere) and its GPUs, or an endpoint by
    URL (``gpu``: this machine's GPU it runs on); an unset API key is refused here."""
    if isinstance(target, Endpoint):
        gpus = GpuPlan(GpuSource.local((gpu,))) if gpu is not None else GpuPlan(None, "a server given by URL")
        spec = WatchSpec(target, gpus)
    else:
        registry = registry or ServerManager()
        registry.adopt_all()
        handle = registry.get(target.name)
        plan = handle.plan if handle is not None and handle.status.state.is_live else registry.plan(target)
        spec = WatchSpec(plan.endpoint, plan_gpus(plan))
    spec.endpoint.check_key()
    return spec
