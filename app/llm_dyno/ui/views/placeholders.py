"""Views still to come, each with a friendly explanation of what will be there."""

from __future__ import annotations

from llm_dyno.ui.widgets.empty_state import EmptyState


def dashboard_placeholder() -> EmptyState:
    """Dashboard: live serving graphs."""
    return EmptyState(
        "dashboard",
        "Live dashboard",
        "Once a profile is running, watch it serve here.",
        [
            "Generation and prompt tokens/s, requests running and waiting",
            "Speculative decoding: acceptance rate, per draft position, mean acceptance length",
            "GPU power against its limit, utilisation, temperature, clocks",
            "KV cache use",
        ],
        badge="Coming soon",
    )


def logs_placeholder() -> EmptyState:
    """Logs: the server's output."""
    return EmptyState(
        "logs",
        "Server logs",
        "Launch a profile to follow its vLLM log here.",
        [
            "Follow, search and filter by level",
            "Warnings in amber, errors in red",
            "Copy lines for a bug report",
        ],
    )
