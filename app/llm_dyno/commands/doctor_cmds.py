"""``llm-dyno doctor``: check Docker, the NVIDIA runtime, GPUs, vLLM images and the vllm executable."""

from __future__ import annotations

import argparse
from typing import Any

from llm_dyno.commands.common import print_json
from llm_dyno.core.doctor import Level, run_checks


def register(sub: Any) -> None:
    """Add ``doctor`` to the CLI."""
    d = sub.add_parser("doctor", help="check this machine: Docker, NVIDIA runtime, GPUs, vLLM images, vllm")
    d.add_argument("--host", metavar="HOST", help="Docker host to check (default: DOCKER_HOST / the context)")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    """Run the checks; exit 1 when any is an error, else 0 (warnings included)."""
    report = run_checks(args.host)
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.render_text())
    return 1 if report.level is Level.ERROR else 0
