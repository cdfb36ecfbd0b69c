"""The window's view of the profile store: the loaded profiles, load errors, and undo of deletes."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from llm_dyno.core.diagnose.apply import free_name
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.profiles.store import LoadReport, ProfileStore, StoredProfile

NEW_PROFILE_IMAGE = "vllm/vllm-openai:latest"
NEW_PROFILE_MODEL = "Qwen/Qwen3-0.6B"


class ProfileSession(QObject):
    """Wraps :class:`ProfileStore`; emits ``changed`` after every write or reload.

    Methods raise :class:`DynoError` for the window to show; they never show dialogs themselves.
    """

    changed = Signal()

    def __init__(self, store: ProfileStore | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store or ProfileStore()
        self.report = LoadReport((), ())
        self._trashed: list[tuple[str, Path]] = []

    # ---- reading -------------------------------------------------------------------------------
    def reload(self, *, cleanup: bool = True) -> LoadReport:
        """Rescan the store. ``cleanup`` first removes temp files of killed writers: not when another
        program may be writing right now (a reload because the folder changed on disk)."""
        if cleanup:
            self.store.cleanup()
        self.report = self.store.load_all()
        self.changed.emit()
        return self.report

    @property
    def profiles(self) -> tuple[StoredProfile, ...]:
        """Profiles that loaded, sorted by name."""
        return self.report.profiles

    @property
    def errors(self) -> tuple[DynoError, ...]:
        """Files that did not load."""
        return self.report.errors

    def names(self) -> list[str]:
        """Loaded profile names."""
        return self.report.names()

    def get(self, name: str) -> Profile | None:
        """A loaded profile by name."""
        return next((sp.profile for sp in self.profiles if sp.profile.name == name), None)

    def unique_name(self, base: str) -> str:
        """``base``, or ``base 2``, ``base 3``… whichever is free."""
        return free_name(base, self.names())

    # ---- writing -------------------------------------------------------------------------------
    def save(self, profile: Profile, original_name: str | None = None) -> Profile:
        """Write ``profile``; when its name changed from ``original_name`` the file is renamed too."""
        if original_name and original_name != profile.name and self.get(original_name) is not None:
            self.store.rename(original_name, profile.name)
        self.store.save(profile, replace=True)
        self.reload()
        return profile

    def add(self, profile: Profile) -> Profile:
        """Store a new profile (its name must be free)."""
        self.store.save(profile, replace=False)
        self.reload()
        return profile

    def new_profile(self, name: str) -> Profile:
        """Create a minimal Docker profile to start editing from."""
        profile = Profile.model_validate(
            {
                "name": name,
                "runtime": Runtime.DOCKER,
                "docker": {"image": NEW_PROFILE_IMAGE, "ports": ["8000:8000"], "ipc": "host"},
                "model": NEW_PROFILE_MODEL,
                "gpus": "all",
                "args": ["--max-model-len", "8192", "--gpu-memory-utilization", "0.9"],
            }
        )
        return self.add(profile)

    def duplicate(self, name: str) -> Profile:
        """Copy a profile under a free name ``<name> copy``."""
        source = self.get(name)
        if source is None:
            raise DynoError(f"no profile named {name!r}")
        return self.add(source.with_changes(name=self.unique_name(f"{name} copy")))

    def rename(self, old: str, new: str) -> None:
        """Rename a profile and its file."""
        self.store.rename(old, new)
        self.reload()

    def delete(self, name: str) -> Path:
        """Move a profile to the trash; :meth:`undo_delete` brings it back."""
        trashed = self.store.delete(name)
        self._trashed.append((name, trashed))
        self.reload()
        return trashed

    @property
    def can_undo(self) -> bool:
        """Whether a delete can be undone."""
        return bool(self._trashed)

    def undo_delete(self) -> str | None:
        """Restore the most recently deleted profile; returns its name (None if nothing to undo)."""
        if not self._trashed:
            return None
        name, path = self._trashed[-1]
        profile = self.store.restore(path)
        self._trashed.pop()
        self.reload()
        return profile.name or name

    def install_shipped(self, names: list[str]) -> list[str]:
        """Install chosen example profiles."""
        installed = self.store.install_shipped(names)
        self.reload()
        return installed
