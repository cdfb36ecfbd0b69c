"""Where a diagnosis gets its inputs: the latest launch log, a profile's own reference numbers, and
a live server's metrics and version. Shared by the CLI and the window."""

from __future__ import annotations

import time

import httpx

from llm_dyno.core.diagnose.references import Reference
from llm_dyno.core.httpbounds import get_bounded
from llm_dyno.core.httpclient import http_client
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.telemetry.metrics import MetricsSnapshot, scrape
from llm_dyno.core.telemetry.rates import MetricsRates, compute_rates


def reference_from_profile(profile: Profile) -> Reference | None:
    """A profile's own ``reference:`` numbers as a Reference (None when it has none)."""
    n = profile.reference
    if n is None:
        return None
    return Reference.model_validate(
        {
            "id": "profile-reference",
            "title": f"numbers noted in profile {profile.name}",
            "hardware": {"gpu": n.gpu, "power_limit_w": n.power_limit_w},
            "numbers": {
                "narrative_tps": n.narrative_tps,
                "code_tps": n.code_tps,
                "acceptance_per_position": list(n.acceptance_per_position),
            },
            "source": {"url": n.source, "text": n.notes},
        }
    )


def read_live(
    url: str, api_key: str | None = None, gap_s: float = 2.0
) -> tuple[MetricsSnapshot, MetricsRates, str | None]:
    """Two /metrics scrapes ``gap_s`` apart (rates need a delta) and the /version answer."""
    with http_client(api_key=api_key, timeout_s=5.0) as client:
        first = scrape(client, url)
        time.sleep(gap_s)
        second = scrape(client, url)
        version: str | None = None
        where = url.rstrip("/") + "/version"
        try:
            status, body = get_bounded(client, where, deadline_s=5.0)
        except httpx.HTTPError:
            status, body = 0, b""  # not answered: an older vLLM, a proxy; the version stays unknown
        # an answer past the bounds or not JSON (BoundsError, OutsideJSONError: DynoErrors naming it)
        # is a server not answering as vLLM does: the caller says so, never a diagnosis as if all was fine
        answer = loads_outside(body, f"GET {where}") if status == 200 else None
        if isinstance(answer, dict):
            version = str(answer.get("version") or "") or None
    return second, compute_rates(first, second), version
