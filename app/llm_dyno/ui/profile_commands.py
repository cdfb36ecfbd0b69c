"""The profile commands of the main window: new, import, export, duplicate, rename, delete, undo."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QInputDialog, QStatusBar, QWidget

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.profiles.store import shipped_profiles
from llm_dyno.ui.actions import Actions
from llm_dyno.ui.dialogs.export_dialog import ExportDialog
from llm_dyno.ui.dialogs.first_run import FirstRunDialog
from llm_dyno.ui.dialogs.import_dialog import ImportDialog
from llm_dyno.ui.dialogs.shortcuts import ShortcutsDialog
from llm_dyno.ui.editor.editor_view import ProfileEditor
from llm_dyno.ui.messages import window_message
from llm_dyno.ui.session import ProfileSession
from llm_dyno.ui.widgets.profile_list import ProfileList


class ProfileCommands:
    """Mixed into :class:`~llm_dyno.ui.main_window.MainWindow`; the window provides these members."""

    session: ProfileSession
    editor: ProfileEditor
    profile_list: ProfileList
    actions_: Actions
    interactive: bool

    if TYPE_CHECKING:  # provided by MainWindow / QMainWindow; not defined here, or they would shadow them

        def statusBar(self) -> QStatusBar: ...
        def confirm_discard(self) -> bool: ...
        def show_error(self, message: str) -> None: ...
        def select_profile(self, name: str) -> None: ...
        def show_view(self, key: str) -> None: ...
        def _update_actions(self) -> None: ...
        def _refresh_from_session(self) -> None: ...

    def _parent(self) -> QWidget | None:
        return self if isinstance(self, QWidget) else None

    def _save(self, profile: Profile, original_name: str) -> None:
        try:
            self.session.save(profile, original_name)
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        self.editor.mark_saved(profile)
        self.profile_list.set_dirty(profile.name, False)
        self.select_profile(profile.name)
        self._update_actions()
        self.statusBar().showMessage(f"Saved “{profile.name}”", 4000)

    def new_profile(self) -> None:
        """Create a profile from a template and edit it."""
        if not self.confirm_discard():
            return
        name = self.session.unique_name("New profile")
        if self.interactive:
            name, ok = QInputDialog.getText(self._parent(), "New profile", "Name:", text=name)
            if not ok or not name.strip():
                return
        try:
            profile = self.session.new_profile(name.strip())
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        self.select_profile(profile.name)
        self.show_view("profile")

    def import_profile(self) -> None:
        """Open the import dialog and store what it produces."""
        if not self.confirm_discard():
            return
        dialog = ImportDialog(self.session.names(), self._parent())
        if dialog.exec() != ImportDialog.DialogCode.Accepted or dialog.profile is None:
            return
        self.add_imported(dialog.profile)

    def add_imported(self, profile: Profile) -> None:
        """Store an imported profile and select it."""
        try:
            self.session.add(profile)
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        self.select_profile(profile.name)
        self.show_view("profile")
        self.statusBar().showMessage(f"Imported “{profile.name}”", 4000)

    def export_profile(self) -> None:
        """Export the selected (saved) profile."""
        profile = self.session.get(self.editor.profile_name or "")
        if profile is not None:
            ExportDialog(profile, self._parent()).exec()

    def duplicate_profile(self) -> None:
        """Copy the selected profile."""
        name = self.editor.profile_name
        if name is None or not self.confirm_discard():
            return
        try:
            copy = self.session.duplicate(name)
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        self.select_profile(copy.name)
        self.statusBar().showMessage(f"Duplicated as “{copy.name}”", 4000)

    def rename_profile(self, new_name: str | None = None) -> None:
        """Rename the selected profile (asks for the name when not given)."""
        old = self.editor.profile_name
        if old is None or not self.confirm_discard():
            return
        if new_name is None:
            if not self.interactive:
                return
            new_name, ok = QInputDialog.getText(self._parent(), "Rename profile", "New name:", text=old)
            if not ok:
                return
        new_name = new_name.strip()
        if not new_name or new_name == old:
            return
        try:
            self.session.rename(old, new_name)
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        self.select_profile(new_name)
        self.statusBar().showMessage(f"Renamed “{old}” to “{new_name}”", 4000)

    def delete_profile(self) -> None:
        """Delete the selected profile (undo with Ctrl+Z or the status bar)."""
        name = self.editor.profile_name
        if name is None:
            return
        try:
            self.session.delete(name)
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        self.editor.set_profile(None)
        self._refresh_from_session()
        self.statusBar().showMessage(f"Deleted “{name}” — Ctrl+Z to undo", 10000)

    def undo_delete(self) -> None:
        """Bring back the last deleted profile."""
        try:
            name = self.session.undo_delete()
        except DynoError as exc:
            self.show_error(window_message(exc))
            return
        if name:
            self.select_profile(name)
            self.statusBar().showMessage(f"Restored “{name}”", 4000)
        self._update_actions()

    def show_shortcuts(self) -> None:
        """F1: the shortcut overlay."""
        ShortcutsDialog(self.actions_.shortcut_list(), self._parent()).exec()

    def offer_shipped_profiles(self) -> None:
        """First run: offer the example profiles."""
        try:
            shipped = shipped_profiles()
        except DynoError as exc:
            self.show_error(f"cannot read the example profiles: {exc}")
            return
        if not shipped:
            return
        dialog = FirstRunDialog(shipped, self._parent())
        if dialog.exec() == FirstRunDialog.DialogCode.Accepted and dialog.chosen():
            self.session.install_shipped(dialog.chosen())
        else:
            self.session.store.folder.mkdir(parents=True, exist_ok=True)
