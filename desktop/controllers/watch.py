"""The watch folders controller: the desktop's :class:`~localapi.core.watch.WatchFolders`, run while the app runs.

The folders are stored in the service's database, so they come back after a restart; the unpaused
ones start watching once the workers run (:meth:`WatchController.start`, from ``Desktop.start``) and
stop when the app closes. Adding, pausing, resuming and removing may block (a watcher is joined, a
folder scanned), so they run in a one-thread pool, in the order asked. What the watchers report
arrives on their own threads and is handed to the GUI thread by a :class:`~desktop.threads.Relay`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from desktop.controllers.errors import describe_service_error
from desktop.threads import Background, Relay
from localapi.core.errors import ServiceError
from localapi.core.service import Service
from localapi.core.watch import WatchFolder, WatchResult, open_watch

log = logging.getLogger("filekiln.desktop")


class WatchController(QObject):
    """Keeps the list of watch folders (``folders``) and changes it off the GUI thread."""

    added = Signal(object)  # WatchFolder: the folder add() stored, once it is listed
    changed = Signal()  # ``folders`` was read again, or a file updated one folder's last activity or error
    result = Signal(object)  # WatchResult: one file converted (ok, outputs) or failed (message, report path)
    failed = Signal(str, str)  # an action was refused or went wrong: what in words, details

    def __init__(self, service: Service, *, settle_seconds: float = 1.0, polling: bool = False,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self._relay = Relay(self._on_result, self)  # made on the GUI thread: results land there
        self.watch = open_watch(service, settle_seconds=settle_seconds, polling=polling,
                                on_result=self._relay.send)
        self._pool = Background(1, self)
        self.folders: list[WatchFolder] = []
        self.running = False  # the stored folders were started (the workers run)
        self._closed = False

    def get(self, folder_id: str) -> WatchFolder | None:
        return next((f for f in self.folders if f.id == folder_id), None)

    # ---- life ----

    def refresh(self) -> None:
        """Read the stored folders again (off the GUI thread); ``changed`` follows."""
        if not self._closed:
            self._pool.run(self.watch.list, self._listed, lambda exc: log.warning("reading watch folders: %s", exc))

    def start(self) -> None:
        """Watch the stored unpaused folders: called once the service's workers run."""
        if self.running or self._closed:
            return
        self.running = True
        self._do(self.watch.start)

    def stop(self) -> None:
        """Stop every watcher (closing): what they have taken is followed again at the next start."""
        self._closed = True
        self._relay.close()
        self._pool.wait(30_000)
        self.watch.stop()

    # ---- actions ----

    def add(self, in_dir: Path, out_dir: Path, preset: str, recursive: bool, after: str) -> None:
        """Store a folder (or update the one with the same two folders) and watch it if the others run."""

        self._do(lambda: self.watch.add(in_dir, out_dir, preset, recursive, after), self.added.emit)

    def pause(self, folder_id: str) -> None:
        self._do(lambda: self.watch.pause(folder_id))

    def resume(self, folder_id: str) -> None:
        self._do(lambda: self.watch.resume(folder_id))  # watched again at once if the others run

    def remove(self, folder_id: str) -> None:
        """Stop watching and forget the folder (its files and outputs stay where they are)."""
        self._do(lambda: self.watch.remove(folder_id))

    def wait(self, msecs: int = 30_000) -> bool:
        return self._pool.wait(msecs)

    def _do(self, action: Callable[[], object], then: Callable[[object], None] | None = None) -> None:
        """Run ``action`` in the pool, then list the folders there too; ``changed`` (then ``then(its result)``)
        or ``failed`` tells how it went."""
        if self._closed:
            return

        def work() -> tuple[object, list[WatchFolder]]:
            return action(), self.watch.list()

        def done(outcome: tuple[object, list[WatchFolder]]) -> None:
            self._listed(outcome[1])
            if then is not None:
                then(outcome[0])

        def failed(exc: BaseException) -> None:
            text, details = describe_service_error(exc)
            if isinstance(exc, ServiceError):  # its detail names the folder and what is wrong with it
                text = exc.detail
            self.failed.emit(text, details)
            self.refresh()  # the action may have half-happened: show what is stored

        self._pool.run(work, done, failed)

    def _listed(self, folders: list[WatchFolder]) -> None:
        self.folders = folders
        self.changed.emit()

    # ---- what the watchers report ----

    def _on_result(self, result: WatchResult) -> None:
        """On the GUI thread: the core stored the time (and the error) before telling; mirror it here."""
        folder = self.get(result.folder_id)
        if folder is not None:
            error = folder.last_error if result.ok else result.message
            updated = dataclasses.replace(folder, last_activity_at=time.time(), last_error=error)
            self.folders = [updated if f.id == folder.id else f for f in self.folders]
            self.changed.emit()
        self.result.emit(result)
