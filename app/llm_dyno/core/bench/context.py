"""The context stored with each result: what ran, where, on which software and hardware.

Collecting it makes no request that generates tokens (only ``GET /version``).
"""

from __future__ import annotations

import platform
import socket

from llm_dyno import __version__
from llm_dyno.core.bench.client import BenchClient, StreamError
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.suite import Suite
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.secrets import strip_credentials
from llm_dyno.core.telemetry.nvml import GpuReading

# The version is context, not a measurement: a server that does not say it soon is asked no longer.
VERSION_DEADLINE_S = 5.0


def collect_context(
    client: BenchClient,
    *,
    model: str,
    suite: Suite,
    profile: Profile | None = None,
    gpu: GpuReading | None = None,
    image_digest: str | None = None,
) -> RunContext:
    """The context of a run about to start; unknown parts are ``None``."""
    version: str | None = None
    try:
        data = client.get_json("/version", timeout_s=VERSION_DEADLINE_S)
        if isinstance(data, dict) and data.get("version"):
            version = str(data["version"])
    except StreamError:
        version = None  # older or non-vLLM servers: the result is still useful without it
    if image_digest is None and profile is not None and profile.docker is not None:
        image_digest = profile.docker.image_digest
    return RunContext(
        url=strip_credentials(client.base_url),
        model=model,
        suite=suite.name,
        suite_definition=suite.to_dict(),
        profile_name=profile.name if profile else None,
        profile=profile.to_dict() if profile else None,
        image=profile.docker.image if profile and profile.docker else None,
        image_digest=image_digest,
        vllm_version=version,
        gpu=gpu.name if gpu else None,
        driver=gpu.driver if gpu else None,
        power_limit_w=(
            gpu.power_limit_w if gpu else (profile.power.limit_w if profile and profile.power else None)
        ),
        host=socket.gethostname(),
        platform=platform.platform(),
        app_version=__version__,
    )
