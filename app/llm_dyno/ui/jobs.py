"""The one worker type of the window: work in a daemon thread with one error route.

A long job is ``work(emit, cancel) -> outcome`` (a core ``prepare_*`` then ``run_*``) run by the
window's jobs manager (:mod:`llm_dyno.ui.jobs_manager`, one job per server or GPU at a time): its
channel's ``progressed`` carries each typed core event, ``finished`` the outcome, ``failed`` a message
for the view. A short task (a plan, a look at the registry, the doctor's checks, a power call)
goes through :func:`run_task`. Both take the same route for errors (:func:`guarded`): a user error (a
:class:`DynoError`) only fails the work, with its message; anything else fails it too (so no dialog
waits forever) and re-raises, so the error funnel (``threading.excepthook``) shows it with its traceback.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from llm_dyno.core.errors import DynoError
from llm_dyno.core.jobs.events import Emit
from llm_dyno.ui.messages import window_message

Work = Callable[[Emit, threading.Event], object]
Failed = Callable[[str], None]


def guarded(name: str, work: Callable[[], None], failed: Failed) -> Callable[[], None]:
    """``work`` on the one error route: a :class:`DynoError` calls ``failed`` with its message in the
    window's words (:func:`~llm_dyno.ui.messages.window_message`); any other exception calls ``failed``
    with ``"NAME failed: Type: message"`` and is re-raised (to the funnel)."""

    def run() -> None:
        try:
            work()
        except DynoError as exc:
            failed(window_message(exc))  # in the window's words (ui/messages), not the CLI's
        except Exception as exc:
            failed(f"{name} failed: {type(exc).__name__}: {exc}")
            raise  # to the error funnel, with the traceback

    return run


def run_here(name: str, work: Callable[[], None], failed: Failed) -> None:
    """Run a task of a few milliseconds on the calling (GUI) thread, on the same route: a bug reaches
    the funnel through ``sys.excepthook`` instead of unwinding the caller."""
    try:
        guarded(name, work, failed)()
    except Exception:
        sys.excepthook(*sys.exc_info())


def run_task(name: str, work: Callable[[], None], failed: Failed) -> threading.Thread:
    """Run a short task in a daemon thread on the one error route (:func:`guarded`). ``work`` and
    ``failed`` run in that thread: hand results to the GUI thread through signals (``signal.emit``)."""
    thread = threading.Thread(target=guarded(name, work, failed), name=name, daemon=True)
    thread.start()
    return thread
