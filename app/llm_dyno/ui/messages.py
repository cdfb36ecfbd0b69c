"""Errors in the window's words: the core's errors may carry a command-line hint (``llm-dyno stop X``,
``--vary``); the window shows what its own controls do instead, once, and never CLI syntax."""

from __future__ import annotations

import re

from llm_dyno.core.errors import DynoError, Fix

# what the window says for each fix the core names (the button, where there is one, is the view's)
WINDOW_HINTS: dict[Fix, str] = {
    Fix.STOP_SERVER: "stop its server first (the Stop button), then try again",
    Fix.CHOOSE_KNOBS: "pick a Recipe, or a Knob and its Values, above",
}
FIX_BUTTONS: dict[Fix, str] = {Fix.STOP_SERVER: "Stop “{subject}”"}

_CLI = re.compile(r"\bllm-dyno\s|(^|[\s(])--[a-z]")


def speaks_cli(text: str) -> bool:
    """Whether a text names a command line or a flag (words for a terminal, not for the window)."""
    return bool(_CLI.search(text))


def window_message(exc: BaseException) -> str:
    """An error as the window shows it: what failed and where, and what to do in the window (a core
    hint that names a command line is left out: the window's own hint for its fix replaces it). Any
    other error (a field's ValueError) is shown as its text."""
    if not isinstance(exc, DynoError):
        return str(exc) or type(exc).__name__
    text = exc.message
    if exc.where is not None and str(exc.where):
        text = f"{exc.where}: {text}"
    hint = WINDOW_HINTS.get(exc.fix) if exc.fix is not None else None
    if hint is None and exc.hint and not speaks_cli(exc.hint):
        hint = exc.hint
    return f"{text}: {hint}" if hint else text


def fix_button(exc: BaseException) -> str | None:
    """The label of the button that fixes this error in the window, or None."""
    if isinstance(exc, DynoError) and exc.fix is not None and exc.fix in FIX_BUTTONS:
        return FIX_BUTTONS[exc.fix].format(subject=exc.subject or "the server")
    return None
