"""One window per user: a second launch asks the first to come to the front, then exits 0.

The first instance listens on a local socket (QLocalServer) named after the user and the config folder
(so a separate ``LLM_DYNO_HOME`` is a separate instance); a second one connects, sends ``raise`` and
quits. A socket left behind by a crashed instance is removed when nobody answers on it.
"""

from __future__ import annotations

import getpass
import hashlib

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from llm_dyno.core import paths

APP_ID = "org.llmdyno.LLMDyno"
RAISE = b"raise\n"
TIMEOUT_MS = 1000


def default_key() -> str:
    """The socket name of this user's instance for the current config folder."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "user"
    digest = hashlib.sha256(str(paths.config_dir()).encode()).hexdigest()[:10]
    return f"{APP_ID}-{user}-{digest}"


class SingleInstance(QObject):
    """Call :meth:`claim`: True makes this the primary; False means another one was asked to raise."""

    raiseRequested = Signal()

    def __init__(self, key: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.key = key or default_key()
        self.server: QLocalServer | None = None

    def notify_running(self) -> bool:
        """Ask a running instance to raise its window; True when one answered."""
        socket = QLocalSocket()
        socket.connectToServer(self.key)
        if not socket.waitForConnected(TIMEOUT_MS):
            return False
        socket.write(RAISE)
        socket.flush()
        socket.waitForBytesWritten(TIMEOUT_MS)
        socket.disconnectFromServer()
        if socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
            socket.waitForDisconnected(TIMEOUT_MS)
        return True

    def claim(self) -> bool:
        """Become the primary instance, or tell the primary to raise (then return False)."""
        if self.notify_running():
            return False
        QLocalServer.removeServer(self.key)  # a stale socket of a crashed instance
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.key):
            # lost a race with another instance starting at the same moment: defer to it
            return not self.notify_running()
        server.newConnection.connect(self._accept)
        self.server = server
        return True

    def release(self) -> None:
        """Stop listening (at quit)."""
        if self.server is not None:
            self.server.close()
            self.server.deleteLater()
            self.server = None

    def _accept(self) -> None:
        if self.server is None:
            return
        while (conn := self.server.nextPendingConnection()) is not None:
            # the second instance writes at once and waits for us: a short blocking read is enough
            data = b""
            while RAISE not in data and (conn.bytesAvailable() or conn.waitForReadyRead(TIMEOUT_MS)):
                data += bytes(conn.readAll().data())
            conn.disconnectFromServer()
            conn.deleteLater()
            if RAISE.strip() in data:
                self.raiseRequested.emit()
