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
from llm_dyno.core.profiles.index import Scanned, build_profiles, read_profile, scan
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
class Listing:
    """What a scan of the store found, unbuilt: the indexed files (by name) and the files that do not read."""

    entries: tuple[Scanned, ...]
    errors: tuple[DynoError, ...]

    def names(self) -> list[str]:
        """The profile names, in display order."""
        return [item.entry.name for item in self.entries if item.entry is not None]

    def find(self, name: str) -> Scanned | None:
        """The file of the profile called ``name``, if any."""
        return next((i for i in self.entries if i.entry is not None and i.entry.name == name), None)


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
        names = sorted(n for n in os.listdir(self.folder) if n.endswith(SUFFIX) and not n.startswith("."))
        return iter(self.folder / n for n in names)

    def scan(self) -> list[Scanned]:
        """Every profile file with its index entry (read again when it changed) or its read error; see
        :mod:`llm_dyno.core.profiles.index`."""
        return scan(self.folder, self._files())

    def listing(self) -> Listing:
        """The profiles as the index knows them, without building them: name, file and the listed
        fields (what ``profile list`` shows); broken files and duplicate names reported, not listed."""
        entries: list[Scanned] = []
        errors: list[DynoError] = []
        seen: dict[str, Path] = {}
        for item in self.scan():
            if item.entry is None:
                if item.error is not None:
                    errors.append(item.error)
                continue
            name = item.entry.name
            if name in seen:
                errors.append(
                    ProfileError(
                        f"duplicate profile name {name!r} (also in {seen[name].name}); skipped",
                        where=Location(str(item.path), None, "name"),
                        hint="rename one of the two profiles",
                    )
                )
                continue
            seen[name] = item.path
            entries.append(item)
        entries.sort(key=lambda item: item.entry.name.lower() if item.entry else "")
        return Listing(tuple(entries), tuple(errors))

    def load_all(self) -> LoadReport:
        """Load every profile; a broken file is reported and skipped, the others still load. Unchanged
        files are built from the index's data, without parsing their YAML again."""
        listing = self.listing()
        profiles: list[StoredProfile] = []
        errors = list(listing.errors)
        for item, built in build_profiles(self.folder, listing.entries):
            if isinstance(built, DynoError):
                errors.append(built)
            else:
                profiles.append(StoredProfile(built, item.path))
        return LoadReport(tuple(profiles), tuple(errors))

    @staticmethod
    def read_file(path: Path) -> Profile:
        """Read one profile file; errors name the file, line and field."""
        return read_profile(path).profile

    def path_for(self, name: str) -> Path:
        """The file a profile of this name lives in (existing file first, else the default file name)."""
        found = self.listing().find(name)
        return found.path if found is not None else self.folder / (file_stem(name) + SUFFIX)

    def get(self, name: str) -> Profile:
        """The profile called ``name`` (its file read now, only that one when the index is current); its
        file's own error when that file does not read; a :class:`StoreError` listing the known names
        otherwise."""
        listing = self.listing()
        found = listing.find(name)
        if found is not None:
            profile = self.read_file(found.path)
            if profile.name == name:
                return profile
            listing = self.listing()  # renamed in the file since it was indexed: look again
            found = listing.find(name)
            if found is not None:
                return self.read_file(found.path)
        for exc in listing.errors:  # its file is there but does not read: say why, not "no profile"
            if (
                exc.where is not None
                and exc.where.file
                and Path(exc.where.file) == self.folder / (file_stem(name) + SUFFIX)
            ):
                raise exc
        known = ", ".join(listing.names()) or "none"
        raise StoreError(
            f"no profile named {name!r}", where=Location(str(self.folder)), hint=f"known profiles: {known}"
        )

    def exists(self, name: str) -> bool:
        """Whether a profile of this name is stored."""
        return self.listing().find(name) is not None

    def save(self, profile: Profile, *, replace: bool = True, renaming: str | None = None) -> Path:
        """Write a profile atomically (the previous version is kept as ``.bak``).

        With ``replace=False`` no profile of the same name, nor of another spelling of it that maps to
        the same file name ("My Model", "my-model"), may exist yet (except ``renaming``, the profile
        being renamed). Saves from several processes at once are serialised by a lock on the folder:
        of two that race for one name without ``replace``, exactly one wins, the other is refused.
        """
        with self._folder_lock():
            listing = self.listing()
            existing = listing.find(profile.name)
            if not replace:
                stem = file_stem(profile.name)
                existing = existing or next(
                    (
                        item
                        for item in listing.entries
                        if item.entry is not None
                        and file_stem(item.entry.name) == stem
                        and item.entry.name != renaming
                    ),
                    None,
                )
            if existing is not None and not replace:
                other = existing.entry.name if existing.entry is not None else profile.name
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
