"""Headless commands: ``llm-dyno profile …``, ``launch``, ``stop``, ``status`` and the rest.

Each command group lives in a ``commands/`` module with a ``register(subparsers)`` function; a
command's handler returns an exit code and reports user errors (:class:`DynoError`) without a traceback.
The command modules (and what they import: HTTP, the benchmark, diagnosis) load only when a command is
given: opening the window needs none of them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from llm_dyno import __version__
from llm_dyno.core.errors import DynoError
from llm_dyno.core.secrets import strip_credentials
from llm_dyno.core.textsafe import LineBound, sanitize, sanitize_bytes

COMMAND_MODULES = (
    "profile_cmds",
    "server_cmds",
    "sleep_cmds",
    "telemetry_cmds",
    "bench_cmds",
    "tune_cmds",
    "export_cmds",
    "diagnose_cmds",
    "doctor_cmds",
    "demo_cmds",
)
WINDOW_OPTIONS = ("--screenshot", "--view", "--size")  # each takes one value


def opens_window(argv: Sequence[str]) -> bool:
    """Whether ``argv`` holds only window options (so no command module needs to load)."""
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in WINDOW_OPTIONS and rest:
            rest.pop(0)
        elif not arg.startswith(tuple(f"{o}=" for o in WINDOW_OPTIONS)):
            return False
    return True


def build_parser(commands: bool = True) -> argparse.ArgumentParser:
    """The full argument parser (the window opens when no command is given)."""
    parser = argparse.ArgumentParser(
        prog="llm-dyno",
        description=(
            "LLM Dyno: a control panel and dynamometer for vLLM servers. No command opens the window."
        ),
    )
    parser.add_argument("--version", action="version", version=f"llm-dyno {__version__}")
    parser.add_argument("--screenshot", metavar="FILE", help="render the window offscreen to a PNG and exit")
    parser.add_argument("--view", metavar="NAME", help="with --screenshot: which view to show")
    parser.add_argument("--size", metavar="WxH", default="1280x800", help="with --screenshot: window size")
    if not commands:
        parser.set_defaults(command=None)
        return parser
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"llm_dyno.commands.{name}").register(sub)
    return parser


class _SafeBytes:
    """``sys.stdout.buffer`` for raw writes (a log file copied out): sanitised as bytes."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def write(self, data: bytes) -> int:
        self._raw.write(sanitize_bytes(bytes(data)))
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _SafeText:
    """A text stream whose writes pass through :func:`sanitize` and :func:`strip_credentials`: the
    one filter between what the commands print (profile fields, server answers, log lines) and the
    user's terminal. A line too long to read is cut (:class:`LineBound`), JSON aside."""

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw
        self._bound = LineBound()
        raw_buffer = getattr(raw, "buffer", None)
        self.buffer = _SafeBytes(raw_buffer) if raw_buffer is not None else None

    def write(self, text: str) -> int:
        # a URL's user:password is not shown either (terminals end up in screenshots and logs)
        self._raw.write(self._bound(strip_credentials(sanitize(text))))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextmanager
def _safe_output() -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _SafeText(sys.stdout), _SafeText(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def run(argv: Sequence[str] | None = None) -> int:
    """Parse and run a command; returns the exit code. Everything it prints is sanitised."""
    with _safe_output():
        return _run(argv)


def _run(argv: Sequence[str] | None = None) -> int:
    """Parse and run a command; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(commands=not opens_window(argv))
    args = parser.parse_args(argv)
    if args.command is None:
        from llm_dyno.ui.app import run_app  # Qt only when the window is wanted

        return run_app(screenshot=args.screenshot, view=args.view, size=args.size)
    from llm_dyno.core import settings as core_settings

    try:  # the app's settings hold for its commands too: default Docker host, data folder
        core_settings.apply(core_settings.load())
    except DynoError as exc:
        print(f"warning: {exc} (settings ignored)", file=sys.stderr)
    try:
        return int(args.handler(args))
    except DynoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
