"""The diagnose job: a profile (and its live server, from the registry) or a URL, with GPU readings.

It reads what a user's rig really shows: the latest launch log, the latest benchmark with the GPU
readings taken under load during it, the latest spec-decode A/B of the profile, the live server's
metrics (sending its API key) and a GPU reading now.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llm_dyno.core.diagnose.gather import Gathered, gather
from llm_dyno.core.diagnose.inputs import Measured
from llm_dyno.core.diagnose.post import Post
from llm_dyno.core.diagnose.references import Reference
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.gpus import GpuPlan, gpu_reader, plan_gpus
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import ServerState
from llm_dyno.core.runtime.manager import ServerManager
from llm_dyno.core.telemetry.nvml import GpuReading

READY_WAIT_S = 5.0  # how long a server found running may take to answer /health


@dataclass(frozen=True)
class DiagnoseSpec:
    """What a diagnosis reads, resolved by :func:`prepare_diagnose`."""

    profile: Profile | None
    reference: Reference | None
    endpoint: Endpoint | None  # the live server, when there is one
    gpus: GpuPlan
    log_path: Path | None = None
    typed: Measured | None = None
    history_path: Path | None = None
    reference_log_path: Path | None = None
    bench_path: Path | None = None  # a result written by bench --json, instead of the history's latest
    post: Post | None = None  # a pasted forum post, read as a log and typed figures


def prepare_diagnose(
    profile: Profile | None,
    reference: Reference | None,
    *,
    endpoint: Endpoint | None = None,
    registry: ServerManager | None = None,
    log_path: Path | None = None,
    typed: Measured | None = None,
    history_path: Path | None = None,
    find_servers: bool = True,
    reference_log_path: Path | None = None,
    bench_path: Path | None = None,
    post: Post | None = None,
) -> DiagnoseSpec:
    """For a profile, its server is the registry's when it is ready; refuses an unset API key. With
    neither a profile nor an endpoint only typed numbers and the reference are read."""
    gpus = GpuPlan(None, "no running server")
    if profile is not None and endpoint is None:
        registry = registry or ServerManager()
        if find_servers:
            registry.adopt_all()
        handle = registry.get(profile.name)
        if find_servers and handle is not None and handle.status.state.is_live:
            handle.wait_ready(READY_WAIT_S)  # a server just found checks /health first
        if handle is not None and handle.status.state is ServerState.READY:
            endpoint, gpus = handle.plan.endpoint, plan_gpus(handle.plan)
    if endpoint is not None:
        endpoint.check_key()
    return DiagnoseSpec(
        profile, reference, endpoint, gpus, log_path, typed, history_path, reference_log_path, bench_path,
        post,
    )  # fmt: skip


def run_diagnose(spec: DiagnoseSpec) -> Gathered:
    """Gather and diagnose (never raises for a server or GPU that does not answer: see the notes)."""
    now: tuple[GpuReading, ...] = ()
    notes: list[str] = []
    if spec.gpus.source is not None:
        try:
            now = (gpu_reader(spec.gpus.source)(),)
        except DynoError as exc:
            notes.append(f"GPU not read: {exc.message}")
    gathered = gather(
        spec.profile,
        spec.reference,
        log_path=spec.log_path,
        live_url=spec.endpoint.url if spec.endpoint is not None else None,
        typed=spec.typed,
        history_path=spec.history_path,
        api_key=spec.endpoint.api_key() if spec.endpoint is not None else None,
        gpu_now=now,
        reference_log_path=spec.reference_log_path,
        bench_path=spec.bench_path,
        post=spec.post,
    )
    if notes:
        gathered = Gathered(gathered.diagnosis, gathered.sources, gathered.diff, (*gathered.notes, *notes))
    return gathered
