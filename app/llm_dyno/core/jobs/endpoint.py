"""A profile's server (or an attached one) as an :class:`~llm_dyno.core.endpoint.Endpoint`: its URL from
the plan the registry knows, its key reference from the runtime's own reading of the profile
(:func:`~llm_dyno.core.profiles.exposure.api_key_reference`: ``--api-key`` in any spelling vLLM takes,
or ``VLLM_API_KEY`` in the profile's environment)."""

from __future__ import annotations

from llm_dyno.core.endpoint import Endpoint, url_endpoint
from llm_dyno.core.profiles.exposure import api_key_reference
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.telemetry.attach import AttachedServer


def profile_endpoint(profile: Profile, plan: LaunchPlan) -> Endpoint:
    """The endpoint of a profile's server as its (launched or planned) plan says."""
    docker_host = profile.docker.host if plan.runtime == "docker" and profile.docker is not None else None
    return Endpoint(
        url=plan.base_url,
        model=profile.served_model_name,
        api_key_ref=api_key_reference(profile),
        docker_host=docker_host,
        profile_name=profile.name,
    )


def attached_endpoint(server: AttachedServer) -> Endpoint:
    """The endpoint of a server attached by URL, its key in the variable the user named."""
    return url_endpoint(server.url, "", api_key_env=server.api_key_env)
