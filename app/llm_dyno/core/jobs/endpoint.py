"""A server attached by URL as an :class:`~llm_dyno.core.endpoint.Endpoint` (a profile's server has the
one its launch plan carries: ``LaunchPlan.endpoint``)."""

from __future__ import annotations

from llm_dyno.core.endpoint import Endpoint, url_endpoint
from llm_dyno.core.telemetry.attach import AttachedServer


def attached_endpoint(server: AttachedServer) -> Endpoint:
    """The endpoint of a server attached by URL, its key in the variable the user named."""
    return url_endpoint(server.url, "", api_key_env=server.api_key_env)
