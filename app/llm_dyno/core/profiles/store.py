"""The profile store: one YAML file per profile in the user's config folder."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from llm_dyno.core import paths
from llm_dyno.core.atomic import atomic_write_text, remove_stale_temps
from llm_dyno.core.errors import DynoError, Location, ProfileError, StoreError
from llm_dyno.core.profiles.model import Profile, profile_from_yaml

SUFFIX = ".yaml"
# the shipped profile of the CPU demo, whose model folder its setup builds
DEMO_PROFILE = "cpu-demo"
# shipped profiles whose model a setup step makes: what to do when the model folder is missing
SETUP_HINTS: dict[str, str] = {
    DEMO_PROFILE: "set up the CPU demo: Help → Check system → Set up the CPU demo, or `llm-dyno demo setup`",
}


def file_stem(name: str) -> str:
    """The file name (without suffix) a profile name is stored under."""
    stem = re.sub(r"[^A-Za-z0-9._+-]+", "-", name.strip()).strip("-.")
    return stem.lower() or "profile"


@dataclass(frozen=True)
class StoredProfile:
    """A profile together with the file it came from."""

    profile: Profile
    path: Path


@dataclass(frozen=True)
class LoadReport:
    """What a scan of the store found: the profiles that load and the files that do not."""

    profiles: tuple[StoredProfile, ...]
    errors: tuple[DynoError, ...]

    def names(self) -> list[str]:
        """The loaded profile names, in display order."""
        return [p.profile.name for p in self.profiles]


class ProfileStore:
    """Reads and writes profile files. Writes are atomic and keep the previous version as ``.bak``."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else paths.profiles_dir()
        self.trash = self.folder / ".trash"

    def _files(self) -> Iterator[Path]:
        if not self.folder.is_dir():
            return iter(())
        return iter(sorted(p for p in self.folder.glob("*" + SUFFIX) if not p.name.startswith(".")))

    def load_all(self) -> LoadReport:
        """Load every profile; a broken file is reported and skipped, the others still load."""
        profiles: list[StoredProfile] = []
        errors: list[DynoError] = []
        seen: dict[str, Path] = {}
        for path in self._files():
            try:
                profile = self.read_file(path)
            except DynoError as exc:
                errors.append(exc)
                continue
            if profile.name in seen:
                errors.append(
                    ProfileError(
                        f"duplicate profile name {profile.name!r} "
                        f"(also in {seen[profile.name].name}); skipped",
                        where=Location(str(path), None, "name"),
                        hint="rename one of the two profiles",
                    )
                )
                continue
            seen[profile.name] = path
            profiles.append(StoredProfile(profile, path))
        profiles.sort(key=lambda sp: sp.profile.name.lower())
        return LoadReport(tuple(profiles), tuple(errors))

    @staticmethod
    def read_file(path: Path) -> Profile:
        """Read one profile file; errors name the file, line and field."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read profile: {exc}", where=Location(str(path))) from None
        return profile_from_yaml(text, source=str(path))

    def path_for(self, name: str) -> Path:
        """The file a profile of this name lives in (existing file first, else the default file name)."""
        for sp in self.load_all().profiles:
            if sp.profile.name == name:
                return sp.path
        return self.folder / (file_stem(name) + SUFFIX)

    def get(self, name: str) -> Profile:
        """The profile called ``name``; its file's own error when that file does not read; a
        :class:`StoreError` listing the known names otherwise."""
        report = self.load_all()
        for sp in report.profiles:
            if sp.profile.name == name:
                return sp.profile
        for exc in report.errors:  # its file is there but does not read: say why, not "no profile"
            if (
                exc.where is not None
                and exc.where.file
                and Path(exc.where.file) == self.folder / (file_stem(name) + SUFFIX)
            ):
                raise exc
        known = ", ".join(report.names()) or "none"
        raise StoreError(
            f"no profile named {name!r}", where=Location(str(self.folder)), hint=f"known profiles: {known}"
        )

    def exists(self, name: str) -> bool:
        """Whether a profile of this name is stored."""
        return name in self.load_all().names()

    def save(self, profile: Profile, *, replace: bool = True, renaming: str | None = None) -> Path:
        """Write a profile atomically (the previous version is kept as ``.bak``).

        With ``replace=False`` no profile of the same name, nor of another spelling of it that maps to
        the same file name ("My Model", "my-model"), may exist yet (except ``renaming``, the profile
        being renamed). Saves from several processes at once are serialised by a lock on the folder:
        of two that race for one name without ``replace``, exactly one wins, the other is refused.
        """
        with self._folder_lock():
            report = self.load_all()
            existing = next((sp for sp in report.profiles if sp.profile.name == profile.name), None)
            if not replace:
                stem = file_stem(profile.name)
                existing = existing or next(
                    (
                        sp
                        for sp in report.profiles
                        if file_stem(sp.profile.name) == stem and sp.profile.name != renaming
                    ),
                    None,
                )
            if existing is not None and not replace:
                other = existing.profile.name
                same = "" if other == profile.name else f" (as {other!r}: the same file name)"
                raise StoreError(
                    f"a profile named {profile.name!r} already exists{same}",
                    where=Location(str(existing.path), None, "name"),
                    hint="choose another name (--name) or delete the existing profile first",
                )
            if existing is not None:
                path = existing.path
            else:
                path = self.folder / (file_stem(profile.name) + SUFFIX)
                n = 2
                while os.path.lexists(path):  # a broken file or another name that maps to the same stem
                    path = self.folder / f"{file_stem(profile.name)}-{n}{SUFFIX}"
                    n += 1
            try:
                atomic_write_text(path, profile.to_yaml(), backup=True, follow_link=True)
            except OSError as exc:
                raise StoreError(f"cannot write profile: {exc}", where=Location(str(path))) from None
            return path

    @contextlib.contextmanager
    def _folder_lock(self) -> Iterator[None]:
        """Hold the store's write lock: a flock on the folder itself (no lock file is left in it)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            where = Location(str(self.folder))
            raise StoreError(f"cannot lock the profile folder: {exc.strerror or exc}", where=where) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def rename(self, old: str, new: str) -> Path:
        """Rename a profile (its file follows the new name)."""
        profile = self.get(old)
        if old == new:
            return self.path_for(old)
        if self.exists(new):
            raise StoreError(f"a profile named {new!r} already exists", hint="choose another name")
        old_path = self.path_for(old)
        renamed = profile.with_changes(name=new)
        path = self.save(renamed, replace=False, renaming=old)
        self._to_trash(old_path)
        return path

    def delete(self, name: str) -> Path:
        """Move a profile's file to the trash folder; returns the trashed path (for undo)."""
        return self._to_trash(self.path_for(name))

    def restore(self, trashed: Path) -> Profile:
        """Undo a delete: bring a trashed file back (fails if its name was taken meanwhile)."""
        profile = self.read_file(trashed)
        self.save(profile, replace=False)
        with contextlib.suppress(OSError):
            trashed.unlink()
        return profile

    def _to_trash(self, path: Path) -> Path:
        if not path.exists():
            raise StoreError("profile file is gone", where=Location(str(path)))
        self.trash.mkdir(parents=True, exist_ok=True)
        target = self.trash / f"{path.stem}.{time.strftime('%Y%m%d-%H%M%S')}.{os.getpid()}{SUFFIX}"
        os.replace(path, target)
        return target

    def cleanup(self) -> int:
        """Remove temp files left by a killed writer; returns how many."""
        return remove_stale_temps(self.folder) if self.folder.is_dir() else 0

    def is_first_run(self) -> bool:
        """True when the store folder has never held a profile."""
        return not self.folder.exists()

    def install_shipped(self, names: list[str] | None = None) -> list[str]:
        """Copy the shipped example profiles into the store (skipping names already taken)."""
        installed: list[str] = []
        self.folder.mkdir(parents=True, exist_ok=True)
        for profile in shipped_profiles():
            if names is not None and profile.name not in names:
                continue
            if not self.exists(profile.name):
                self.save(profile, replace=False)
                installed.append(profile.name)
        return installed


def shipped_profiles() -> list[Profile]:
    """The example profiles shipped with the app."""
    folder = paths.shipped_profiles_dir()
    return [
        profile_from_yaml(p.read_text(encoding="utf-8"), str(p)) for p in sorted(folder.glob("*" + SUFFIX))
    ]
