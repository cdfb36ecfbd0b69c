"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.unsaved import keep_unsaved
from llm_dyno.core.jobs.gpus import parse_gpu_index
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.textsafe import whole_lines


def store() -> ProfileStore:
    """The user's profile store (``LLM_DYNO_HOME`` respected)."""
    return ProfileStore()


def print_json(data: Any) -> None:
    """Write JSON to stdout, whole (long lines are not cut: a program reads it)."""
    with whole_lines():
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")


def report_unsaved(unsaved: str, json_text: str, kind: str, json_file: str | None) -> None:
    """Say on stderr that a result is not stored whole and where it is kept instead (``--json FILE``
    when given, else a file :func:`keep_unsaved` writes)."""
    kept = Path(json_file) if json_file else keep_unsaved(json_text, kind)
    where = f"the whole result is kept in {kept}" if kept else "the result could not be kept in a file either"
    print(f"error: {unsaved}; {where}", file=sys.stderr)
    print("  → free the history database (or its folder) and run the command again", file=sys.stderr)


def gpu_index(text: str) -> int:
    """argparse ``type`` of every ``--gpu N``: an index 0..255 (:func:`parse_gpu_index`)."""
    try:
        return parse_gpu_index(text)
    except DynoError as exc:  # argparse says "argument --gpu: …" and exits 2
        raise argparse.ArgumentTypeError(str(exc)) from None


def warn(message: str) -> None:
    """A warning on stderr."""
    print(f"warning: {message}", file=sys.stderr)
