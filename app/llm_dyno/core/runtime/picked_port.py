"""The server's host port when Docker picks it (``ports: ["8000"]``, ``-p 8000``, a host range): the plan
says "chosen by Docker at launch" (``host_port`` :data:`PICKED_BY_DOCKER`), and once the container runs
the port Docker picked is read back from it (``docker inspect``'s ``NetworkSettings.Ports``), so that
readiness, metrics and benchmarks call that port. An adopted container is read the same way."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from llm_dyno.core.errors import DynoError
from llm_dyno.core.httpclient import server_url
from llm_dyno.core.runtime.base import LaunchPlan

PICKED_BY_DOCKER = 0  # a plan's host_port before Docker picked it
PICKED_NOTE = "host port: chosen by Docker at launch (read back from the container once it starts)"


def engine_port_key(plan: LaunchPlan) -> str:
    """``8000/tcp``: the server's port in the container, as Docker keys its port bindings."""
    return f"{plan.engine.port or 8000}/tcp"


def picked_port(attrs: Mapping[str, Any], key: str, host_ip: str = "") -> int | None:
    """The host port Docker bound for the container port ``key`` (``8000/tcp``), from a container's
    inspect data; the binding on ``host_ip`` first when there are several. None when there is none."""
    rows = ((attrs.get("NetworkSettings") or {}).get("Ports") or {}).get(key) or []
    ports = [
        (str(r.get("HostIp") or ""), int(r["HostPort"]))
        for r in rows
        if isinstance(r, dict) and str(r.get("HostPort") or "").isdigit()
    ]
    for ip, port in ports:
        if ip == host_ip:
            return port
    return ports[0][1] if ports else None


def with_host_port(plan: LaunchPlan, port: int) -> LaunchPlan:
    """The plan calling ``port`` on its host (the port Docker picked)."""
    host = urlsplit(plan.base_url).hostname or "127.0.0.1"
    return dataclasses.replace(plan, host_port=port, base_url=server_url(host, port))


def with_picked_port(plan: LaunchPlan, attrs: Mapping[str, Any]) -> LaunchPlan:
    """The plan calling the port Docker picked, read from the container's inspect data ``attrs``; the
    plan itself when its port was fixed. Raises a DynoError when Docker published none."""
    if plan.host_port != PICKED_BY_DOCKER:
        return plan
    port = picked_port(attrs, engine_port_key(plan))
    if port is None:
        raise DynoError(
            f"Docker published no host port for the server's port {engine_port_key(plan)}",
            hint="publish the port with a fixed host port, such as '8000:8000'",
        )
    return with_host_port(plan, port)
