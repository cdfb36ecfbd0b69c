"""Profiles changed on disk (by ``llm-dyno profile import``, the CPU-demo setup or an editor) appear in
the window without a restart: the profiles folder and its files are watched, and a burst of changes
(an atomic write is a create, a write and a rename) is answered with one reload.
"""

from __future__ import annotations

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer

from llm_dyno.ui.session import ProfileSession

DEBOUNCE_MS = 300


class ProfileFolderWatcher(QObject):
    """Reloads ``session`` shortly after its store's folder (or a profile file in it) changes."""

    def __init__(self, session: ProfileSession, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.reloads = 0  # how many reloads a change on disk caused (tests, diagnostics)
        self._watcher = QFileSystemWatcher(self)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._reload)
        self._watcher.directoryChanged.connect(lambda _p: self._timer.start())
        self._watcher.fileChanged.connect(lambda _p: self._timer.start())
        session.changed.connect(self._watch)
        self._watch()
        self._seen = self._snapshot()

    def _snapshot(self) -> dict[str, tuple[int, int]]:
        """Each profile file's size and modification time: what a reload would read anew. The folder
        also changes when the store writes its index there, which must not reload the window."""
        seen: dict[str, tuple[int, int]] = {}
        folder = self.session.store.folder
        for path in folder.glob("*.yaml") if folder.is_dir() else ():
            try:
                st = path.stat()
            except OSError:
                continue  # gone between listing and reading: the next change says so
            seen[path.name] = (st.st_mtime_ns, st.st_size)
        return seen

    def _watch(self) -> None:
        """Watch the folder (and its parent until the folder exists) and every profile file in it."""
        folder = self.session.store.folder
        wanted = [str(folder)] if folder.is_dir() else [str(p) for p in folder.parents if p.is_dir()][:1]
        if folder.is_dir():
            wanted += [str(p) for p in sorted(folder.glob("*.yaml"))]
        watched = set(self._watcher.directories()) | set(self._watcher.files())
        stale = [p for p in watched if p not in wanted]
        if stale:
            self._watcher.removePaths(stale)
        new = [p for p in wanted if p not in watched]
        if new:
            self._watcher.addPaths(new)

    def _reload(self) -> None:
        seen = self._snapshot()
        if seen == self._seen:
            return  # nothing a profile is read from changed (the store's own index, a temp file)
        self._seen = seen
        self.reloads += 1
        self.session.reload(cleanup=False)  # another program may be mid-write: leave its temp file
