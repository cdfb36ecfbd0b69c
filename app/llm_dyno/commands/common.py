"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import json
import sys
from typing import Any

from llm_dyno.core.profiles.store import ProfileStore


def store() -> ProfileStore:
    """The user's profile store (``LLM_DYNO_HOME`` respected)."""
    return ProfileStore()


def print_json(data: Any) -> None:
    """Write JSON to stdout."""
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def warn(message: str) -> None:
    """A warning on stderr."""
    print(f"warning: {message}", file=sys.stderr)
