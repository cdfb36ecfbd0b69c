"""Docker contexts, found as the docker CLI stores them.

docker-py's ``ContextAPI`` looks for contexts next to an existing ``config.json`` only; the CLI
creates them whether or not that file exists (``docker context create`` on a fresh machine writes
none). So a context that docker-py does not find is read here from
``$DOCKER_CONFIG/contexts`` (default ``~/.docker/contexts``): its engine URL from ``meta.json`` and,
for TLS, the certificates the CLI keeps beside it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_dyno.core.jsontext import loads_outside

# the app's "Default Docker host" setting, once applied (settings.apply): held here, not in os.environ
_default_host: str | None = None


def use_default_host(host: str | None) -> None:
    """The Docker host (a URL or a context's name) of profiles that name none; None: the environment's."""
    global _default_host
    _default_host = host or None


def default_host() -> str | None:
    """The app's default Docker host setting, if one was applied (None: DOCKER_HOST / the context)."""
    return _default_host


@dataclass(frozen=True)
class Endpoint:
    """Where a context's engine is: its URL and the TLS settings for docker-py (False: none)."""

    host: str
    tls: Any = False


def _config_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("DOCKER_CONFIG") or Path.home() / ".docker")


def find_context(name: str | None, environ: Mapping[str, str] | None = None) -> Endpoint | None:
    """The engine of the context ``name`` (None: the current one), or None when there is none."""
    from docker.context import ContextAPI  # reads files only; talks to no engine

    env = os.environ if environ is None else environ
    try:
        ctx = ContextAPI.get_context(name)
    except Exception:  # a broken context file: read it ourselves below, or report no context
        ctx = None
    if ctx is not None and ctx.Host:
        return Endpoint(ctx.Host, ctx.TLSConfig or False)
    if not name:
        return None
    key = hashlib.sha256(name.encode("utf-8")).hexdigest()
    contexts = _config_dir(env) / "contexts"
    try:
        meta_file = contexts / "meta" / key / "meta.json"
        meta = loads_outside(meta_file.read_text(encoding="utf-8"), str(meta_file))
        endpoint = meta["Endpoints"]["docker"]
        host = str(endpoint["Host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    tls_dir = contexts / "tls" / key / "docker"
    if not (tls_dir / "cert.pem").is_file():
        return Endpoint(host)
    from docker.tls import TLSConfig

    ca = tls_dir / "ca.pem"
    return Endpoint(
        host,
        TLSConfig(
            client_cert=(str(tls_dir / "cert.pem"), str(tls_dir / "key.pem")),
            ca_cert=str(ca) if ca.is_file() else None,
            verify=not endpoint.get("SkipTLSVerify", False),
        ),
    )
