"""The window's actions (toolbar, menus, shortcuts) in one place, with the F1 list made from them."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from llm_dyno.ui.icons import icon

VIEWS: tuple[tuple[str, str, str], ...] = (
    ("profile", "Profile", "profile"),
    ("diff", "Diff", "diff"),
    ("dashboard", "Dashboard", "dashboard"),
    ("logs", "Logs", "logs"),
    ("benchmark", "Benchmark", "benchmark"),
    ("diagnostics", "Diagnostics", "diagnostics"),
    ("servers", "Servers", "dashboard"),  # every running server at a glance (views/servers_overview.py)
    ("tune", "Tune", "benchmark"),  # knob sweeps with the knee and a recommendation (tune/tune_view.py)
)


@dataclass
class Actions:
    """Every QAction of the main window."""

    new: QAction
    import_: QAction
    export: QAction
    save: QAction
    duplicate: QAction
    rename: QAction
    delete: QAction
    undo_delete: QAction
    launch: QAction
    stop: QAction
    plan: QAction
    filter: QAction
    shortcuts: QAction
    views: list[QAction]
    extra: list[QAction] = field(default_factory=list)  # added later (settings, check system…)

    def shortcut_list(self) -> list[tuple[str, str]]:
        """(keys, description) for the shortcut overlay."""
        out = []
        for a in (
            self.new,
            self.import_,
            self.save,
            self.duplicate,
            self.rename,
            self.delete,
            self.undo_delete,
            self.filter,
            self.launch,
            self.stop,
            self.shortcuts,
            *self.extra,
        ):
            keys = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            if keys:
                out.append((keys, a.toolTip().split(" (")[0] or a.text().replace("&", "")))
        out.append((f"Ctrl+1 … Ctrl+{len(VIEWS)}", "Switch view: " + ", ".join(v[1] for v in VIEWS)))
        return out


def _action(
    parent: QWidget, text: str, icon_name: str | None, keys: str | QKeySequence.StandardKey | None, tip: str
) -> QAction:
    action = QAction(text, parent)
    if icon_name:
        action.setIcon(icon(icon_name))
    if keys is not None:
        action.setShortcut(QKeySequence(keys))
    shortcut = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
    action.setToolTip(f"{tip} ({shortcut})" if shortcut else tip)
    parent.addAction(action)
    return action


def make_actions(parent: QWidget) -> Actions:
    """Create the actions (not yet connected)."""
    views = []
    for i, (_key, label, icon_name) in enumerate(VIEWS, start=1):
        views.append(_action(parent, label, icon_name, f"Ctrl+{i}", f"Show {label}"))
    return Actions(
        new=_action(parent, "New", "add", "Ctrl+N", "New profile"),
        import_=_action(
            parent, "Import", "import", "Ctrl+I", "Import from compose, docker run or vllm serve"
        ),
        export=_action(parent, "Export", "export", "Ctrl+E", "Export as compose, docker run or vllm serve"),
        save=_action(parent, "Save", "save", "Ctrl+S", "Save the profile"),
        duplicate=_action(parent, "Duplicate", "duplicate", "Ctrl+D", "Duplicate the profile"),
        rename=_action(parent, "Rename", "rename", "F2", "Rename the profile"),
        delete=_action(parent, "Delete", "delete", "Del", "Delete the profile"),
        undo_delete=_action(parent, "Undo delete", "undo", "Ctrl+Z", "Undo the last delete"),
        launch=_action(parent, "Launch", "play", "Ctrl+R", "Launch the profile's server"),
        stop=_action(parent, "Stop", "stop", "Ctrl+.", "Stop the server"),
        plan=_action(parent, "Plan", "plan", "Ctrl+P", "Show what would run (dry run)"),
        filter=_action(parent, "Filter", "filter", "Ctrl+F", "Filter profiles"),
        shortcuts=_action(parent, "Shortcuts", "keyboard", "F1", "Show keyboard shortcuts"),
        views=views,
    )
