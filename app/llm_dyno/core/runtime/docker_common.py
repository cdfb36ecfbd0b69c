"""What the container spec, the ``docker`` command line and the engine's errors share, below all
three: the labels the app puts on its containers, whether a ``docker.host`` is an engine URL or a
context's name, and a port binding's address."""

from __future__ import annotations

from typing import Any

LABEL_MANAGED = "llm-dyno.managed"
LABEL_PROFILE = "llm-dyno.profile"
LABEL_HASH = "llm-dyno.profile-hash"
LABEL_PORT = "llm-dyno.host-port"  # the port the panel talks to, so an adopted container needs no profile
# The profile the container was launched with (references, never resolved secrets): what adoption reads
LABEL_SNAPSHOT = "llm-dyno.profile-snapshot"

_URL_SCHEMES = ("unix://", "tcp://", "ssh://", "npipe://", "http://", "https://")


def is_url_host(host: str) -> bool:
    """Whether a profile's ``docker.host`` is an engine URL (else it names a docker context)."""
    return host.startswith(_URL_SCHEMES)


def host_ip(binding: Any) -> str:
    """The address of a port binding in the spec ("" for every interface)."""
    return str(binding[0]) if binding else ""
