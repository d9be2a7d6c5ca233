"""One FileKiln window per data dir: a second launch hands its files to the first and exits.

``filekiln gui FILE...``, "Open with FileKiln" in a file manager, or a drop on the app's icon
starts a second process; it connects to the first one's local socket (named after the data dir),
sends the paths as one JSON line, and exits. The first window adds them to its file list and
comes to the front. The socket is the user's alone (``UserAccessOption``); a stale one left by a
crash is removed when nobody answers on it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

CONNECT_MS = 500
SEND_MS = 2000
MAX_MESSAGE = 1 << 20  # a megabyte of paths is thousands of files; anything more is not ours


def server_name(data_dir: Path) -> str:
    """The local socket's name: one per user's data dir (a second data dir runs a second app)."""
    return "filekiln-" + hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]


def hand_over(name: str, paths: Sequence[Path]) -> bool:
    """Send ``paths`` to a running FileKiln; False when none answers (this one should start)."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_MS):
        return False
    socket.write(json.dumps({"open": [str(p.absolute()) for p in paths]}).encode() + b"\n")
    socket.flush()
    socket.waitForBytesWritten(SEND_MS)
    socket.disconnectFromServer()
    return True


class SingleInstance(QObject):
    """The first window's end of the socket: ``files_received`` for every later launch (maybe empty)."""

    files_received = Signal(list)  # list[Path]

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._accept)
        self._buffers: dict[QLocalSocket, bytearray] = {}

    def listen(self) -> bool:
        """Take the name; a socket file left by a crashed FileKiln (nobody answers on it) is removed first."""
        if self.server.listen(self.name):
            return True
        QLocalServer.removeServer(self.name)
        return self.server.listen(self.name)

    def close(self) -> None:
        self.server.close()

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            self._buffers[socket] = bytearray()
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(lambda s=socket: self._done(s))

    def _read(self, socket: QLocalSocket) -> None:
        buffer = self._buffers.get(socket)
        if buffer is None:
            return
        buffer += bytes(socket.readAll().data())
        if len(buffer) > MAX_MESSAGE:
            self._buffers.pop(socket, None)
            socket.abort()
        elif buffer.endswith(b"\n"):
            self._done(socket)

    def _done(self, socket: QLocalSocket) -> None:
        buffer = self._buffers.pop(socket, None)
        socket.deleteLater()
        if not buffer:
            return
        try:
            message = json.loads(buffer)
            paths = [Path(p) for p in message.get("open", []) if isinstance(p, str)]
        except (ValueError, AttributeError):
            return
        self.files_received.emit([p for p in paths if p.exists()])
