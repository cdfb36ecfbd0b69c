"""What a view shows, read from its widgets (the tests' way of looking, instead of view accessors)."""

from __future__ import annotations

from llm_dyno.ui.dashboard import Dashboard
from llm_dyno.ui.views.server_view import ServerView


def shown_dashboard(view: ServerView) -> Dashboard | None:
    """The dashboard on top of the server view's stack, if a dashboard is what it shows."""
    widget = view.stack.currentWidget()
    return widget if isinstance(widget, Dashboard) else None
