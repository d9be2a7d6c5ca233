"""The stored watch folders, and the watchers of those that run.

Folders live in the database (``watch_folders``), so they come back after a restart; the files taken
from them in the ledger (``watched_files``, :mod:`.ledger`).
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from localapi.core.db import new_id, now
from localapi.core.errors import InvalidParams, ServiceError, WatchFolderNotFound
from localapi.core.watch.ledger import Ledger
from localapi.core.watch.records import AFTER, WatchFolder, WatchResult
from localapi.core.watch.watcher import Watcher

log = logging.getLogger("filekiln.watch")




class WatchFolders:
    """Add, list, pause, resume and remove watch folders; :meth:`start` runs the unpaused ones.

    ``on_result`` hears of every file done with, from a watcher's thread.
    """

    def __init__(self, service: Any, *, settle_seconds: float = 1.0, polling: bool = False,
                 on_result: Callable[[WatchResult], None] | None = None) -> None:
        self.service = service
        self.db = service.db
        self.ledger = Ledger(self.db)
        self.settle_seconds = settle_seconds
        self.polling = polling
        self.on_result = on_result
        self.running: dict[str, Watcher] = {}
        self._started = False
        self._lock = threading.Lock()

    # ---- the stored folders ----

    def add(self, in_dir: Path, out_dir: Path, preset: str, recursive: bool = False,
            after: str = "keep") -> WatchFolder:
        """Store a folder (or update the one with the same input and output folders) and return it."""
        in_dir, out_dir = self._check(in_dir, out_dir, preset, recursive, after)
        out_dir.mkdir(parents=True, exist_ok=True)
        self.db.execute(
            "insert into watch_folders (id, in_dir, out_dir, preset, recursive, after, created_at)"
            " values (?, ?, ?, ?, ?, ?, ?) on conflict (in_dir, out_dir) do update set preset = excluded.preset,"
            " recursive = excluded.recursive, after = excluded.after, paused = 0",
            new_id("watch"), str(in_dir), str(out_dir), preset, int(recursive), after, now())
        row = self.db.one("select * from watch_folders where in_dir = ? and out_dir = ?", str(in_dir), str(out_dir))
        folder = WatchFolder.from_row(row)
        if folder.id in self.running:  # changed while it runs: run it as it is now
            self._stop(folder.id)
        if self._started:  # watchers run here: a new (or changed) folder runs at once
            self.start([folder.id])
        return folder

    def _check(self, in_dir: Path, out_dir: Path, preset: str, recursive: bool, after: str) -> tuple[Path, Path]:
        def refuse(field: str, message: str) -> ServiceError:
            return InvalidParams(message, code="invalid_watch_folder", errors={field: [message]})

        for field, path in (("inDir", in_dir), ("outDir", out_dir)):
            if not path.is_absolute():
                raise refuse(field, f"{path} is not an absolute path.")
        if not in_dir.is_dir():
            raise refuse("inDir", f"{in_dir} is not a folder.")
        in_dir, out_dir = in_dir.resolve(), out_dir.resolve()
        if in_dir == out_dir:
            raise refuse("outDir", "The output folder must not be the watched folder.")
        if out_dir in in_dir.parents:  # the watched folder inside the output one: outputs could land in it
            raise refuse("inDir", "The watched folder must not be inside the output folder.")
        # an output folder inside the watched one is fine: the watcher never takes anything from it
        if after not in AFTER:
            raise refuse("after", f"After is one of {', '.join(AFTER)}.")
        try:
            self.service.presets.get(preset)
        except ServiceError:
            raise refuse("preset", f"No preset {preset!r}.") from None
        return in_dir, out_dir

    def list(self) -> list[WatchFolder]:
        return [WatchFolder.from_row(r) for r in self.db.all("select * from watch_folders order by created_at, id")]

    def get(self, folder_id: str) -> WatchFolder:
        row = self.db.one("select * from watch_folders where id = ?", folder_id)
        if row is None:
            raise WatchFolderNotFound(f"No watch folder {folder_id!r}.")
        return WatchFolder.from_row(row)

    def pause(self, folder_id: str) -> WatchFolder:
        self.get(folder_id)
        self.db.execute("update watch_folders set paused = 1 where id = ?", folder_id)
        self._stop(folder_id)
        return self.get(folder_id)

    def resume(self, folder_id: str) -> WatchFolder:
        self.get(folder_id)
        self.db.execute("update watch_folders set paused = 0 where id = ?", folder_id)
        if self._started:
            self.start([folder_id])
        return self.get(folder_id)

    def remove(self, folder_id: str) -> None:
        """Stop watching and forget the folder and its ledger (the files and outputs stay)."""
        self.get(folder_id)
        self._stop(folder_id)
        self.db.execute("delete from watch_folders where id = ?", folder_id)
        self.ledger.forget(folder_id)

    # ---- running ----

    def start(self, folder_ids: Iterable[str] | None = None) -> builtins.list[WatchFolder]:
        """Watch the unpaused folders (all, or those named); the service's workers must run for them to convert."""
        wanted = set(folder_ids) if folder_ids is not None else None
        started = []
        with self._lock:
            self._started = True
            for folder in self.list():
                if folder.paused or folder.id in self.running or (wanted is not None and folder.id not in wanted):
                    continue
                watcher = Watcher(self.service, self.ledger, folder, self._report,
                                  settle_seconds=self.settle_seconds, polling=self.polling)
                watcher.start()
                self.running[folder.id] = watcher
                started.append(folder)
        return started

    def stop(self) -> None:
        with self._lock:
            self._started = False
            watchers, self.running = list(self.running.values()), {}
        for watcher in watchers:
            watcher.stop()

    def _stop(self, folder_id: str) -> None:
        with self._lock:
            watcher = self.running.pop(folder_id, None)
        if watcher is not None:
            watcher.stop()

    def _report(self, result: WatchResult) -> None:
        if result.ok:
            self.db.execute("update watch_folders set last_activity_at = ? where id = ?", now(), result.folder_id)
        else:
            self.db.execute("update watch_folders set last_activity_at = ?, last_error = ? where id = ?",
                            now(), result.message, result.folder_id)
        if self.on_result is not None:
            self.on_result(result)


def open_watch(service: Any, *, settle_seconds: float = 1.0, polling: bool = False,
               on_result: Callable[[WatchResult], None] | None = None) -> WatchFolders:
    """The watch folders of ``service``'s data dir (their tables made if new); nothing runs until ``start``."""
    return WatchFolders(service, settle_seconds=settle_seconds, polling=polling, on_result=on_result)
