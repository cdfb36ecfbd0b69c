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


def benchmark_placeholder() -> EmptyState:
    """Benchmark: the community protocol."""
    return EmptyState(
        "benchmark",
        "One-click benchmark",
        "Run the community's standard prompt benchmark against the running server and keep every result.",
        [
            "Narrative and code prompts, 3 warm-ups then 5 measured runs each",
            "wall and decode tokens/s, TTFT, energy per token",
            "Compare with earlier runs and with reference numbers",
            "Power-cap sweeps to find the efficiency knee",
        ],
        badge="Coming soon",
    )


def diagnostics_placeholder() -> EmptyState:
    """Diagnostics: why is mine slower."""
    return EmptyState(
        "diagnostics",
        "Why is mine slower?",
        "Findings from your profile, environment, logs, metrics and results, ranked by likely impact.",
        [
            "Config and environment diff against a reference setup",
            "Throttling, power caps and thermal state",
            "CUDA graph downgrades, KV cache pressure, low acceptance",
        ],
        badge="Coming soon",
    )
