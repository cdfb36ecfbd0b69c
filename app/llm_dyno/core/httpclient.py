"""The one way to talk HTTP to a vLLM server: its address, its ``Authorization`` header, its client.

- :func:`host_port` writes a host and port as a URL's authority (an IPv6 address in brackets), and
  :func:`server_url` the base URL of a server: every backend and front end builds addresses with them.
- :func:`auth_headers` is the one place that spells the bearer header.
- :func:`http_client` makes every ``httpx.Client`` that reaches a server, with one proxy policy: the
  servers this app talks to are the user's own (on loopback, the LAN, or a Docker host), so proxy
  variables (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``) are never read — a proxy would see the
  API key in every request and could not reach 127.0.0.1 anyway. A server behind a proxy or a
  bastion is reached through its own URL (an SSH tunnel, for instance). Timeouts are bounded; whole
  requests are bounded by :mod:`llm_dyno.core.httpbounds`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

CONNECT_TIMEOUT_S = 10.0


def host_port(host: str, port: int) -> str:
    """``127.0.0.1:8000``, ``[::1]:8000``: ``host`` and ``port`` as a URL writes them."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def server_url(host: str, port: int, scheme: str = "http") -> str:
    """The base URL of a server listening on ``host``:``port`` (``http://[::1]:8000``)."""
    return f"{scheme}://{host_port(host, port)}"


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The request headers that carry ``api_key`` (none without a key). Holds a secret: never log them."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def http_client(
    base_url: str = "",
    *,
    api_key: str | None = None,
    timeout_s: float = 10.0,
    connect_s: float = CONNECT_TIMEOUT_S,
    max_connections: int = 4,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """An ``httpx.Client`` for a server: bounded timeouts (``timeout_s`` per read, ``connect_s`` to
    connect), a bounded pool, the key's header, and no proxy (see the module's note). ``transport``
    lets tests put a recorded server in place of the network."""
    import httpx  # here: the window starts without it

    return httpx.Client(
        base_url=base_url.rstrip("/"),
        headers=auth_headers(api_key),
        transport=transport,
        timeout=httpx.Timeout(timeout_s, connect=min(connect_s, timeout_s)),
        limits=httpx.Limits(
            max_keepalive_connections=min(2, max_connections), max_connections=max_connections
        ),
        trust_env=False,
    )
