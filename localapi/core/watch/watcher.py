"""One watched folder at run time.

Events from the operating system (or from polling) only mark files as candidates. One thread, every
:data:`TICK` seconds, takes each candidate whose size and mtime have not changed for ``settle_seconds``
— so a copy in progress or a browser download is never converted half-written — and follows the
workflows it made: a DONE one's outputs are copied into ``OUT_DIR/<rel subdir>/``, a FAILED or
CANCELED one leaves the input where it was and writes ``OUT_DIR/failed/<rel subdir>/<name>.error.txt``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from watchdog.events import EVENT_TYPE_CREATED, EVENT_TYPE_MOVED, FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from converters.base import free_name
from localapi.core.errors import ServiceError
from localapi.core.jobs import Caller
from localapi.core.states import JobStatus
from localapi.core.watch.ledger import FileStatus, Ledger, Taken, Version
from localapi.core.watch.records import DONE_DIR, FAILED_DIR, WatchFolder, WatchResult

log = logging.getLogger("filekiln.watch")

TICK = 0.1  # how often candidates are looked at and workflows followed
POLL_SECONDS = 1.0  # the polling observer's interval (network drives)
TEMP_NAMES = ("*.part", "*.crdownload", "*.tmp", "~$*", ".~lock*")  # downloads and office lock files


def ignored(rel: PurePosixPath) -> bool:
    """Hidden anywhere on its path (``.filekiln-done`` too), or a name that browsers and editors write to."""
    return any(part.startswith(".") for part in rel.parts) or any(fnmatch.fnmatch(rel.name, p) for p in TEMP_NAMES)


def sha256_of(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@dataclass
class _Candidate:
    size: int
    mtime_ns: int
    since: float  # monotonic time its size and mtime were last seen to change


class Watcher:
    """Watches one folder until :meth:`stop`; ``report`` hears of every file done with (from its thread)."""

    def __init__(self, service: Any, ledger: Ledger, folder: WatchFolder, report: Callable[[WatchResult], None],
                 *, settle_seconds: float = 1.0, polling: bool = False) -> None:
        self.service = service
        self.ledger = ledger
        self.folder = folder
        self.report = report
        self.settle_seconds = settle_seconds
        self.polling = polling
        self.candidates: dict[PurePosixPath, _Candidate] = {}
        self.pending: dict[str, Taken] = {}  # workflow id -> the row it converts
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._observer: BaseObserver | None = None
        self._thread: threading.Thread | None = None

    # ---- life ----

    def start(self) -> None:
        """Follow what a previous run left, watch, then look at what is there already."""
        for taken in self.ledger.following(self.folder.id):
            if taken.workflow_id is not None:
                self.pending[taken.workflow_id] = taken
        self._observer = self._observe()
        self.scan(self.folder.in_dir)
        self._thread = threading.Thread(target=self._run, name=f"watch-{self.folder.id[-6:]}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    def _observe(self) -> BaseObserver:
        """The platform's observer (inotify, FSEvents ...), or polling when asked or when that cannot start."""
        handler = _Events(self)
        if not self.polling:
            observer = Observer()
            try:
                observer.schedule(handler, str(self.folder.in_dir), recursive=self.folder.recursive)
                observer.start()
                return observer
            except OSError as exc:  # e.g. out of inotify watches, or a file system without events
                log.warning("watching %s by polling: %s", self.folder.in_dir, exc)
                self.polling = True
        observer = PollingObserver(timeout=POLL_SECONDS)
        observer.schedule(handler, str(self.folder.in_dir), recursive=self.folder.recursive)
        observer.start()
        return observer

    # ---- candidates ----

    def relative(self, path: Path) -> PurePosixPath | None:
        """``path`` under the watched folder, or None when it is not for this watch to take."""
        folder = self.folder
        if path == folder.out_dir or folder.out_dir in path.parents:  # our own outputs and failed/
            return None
        try:
            rel = PurePosixPath(path.relative_to(folder.in_dir).as_posix())
        except ValueError:
            return None
        if not rel.parts or (len(rel.parts) > 1 and not folder.recursive) or ignored(rel):
            return None
        return rel

    def notice(self, path: Path) -> None:
        rel = self.relative(path)
        if rel is not None:
            with self._lock:  # measured from its first stat on the next tick
                self.candidates.setdefault(rel, _Candidate(-1, -1, time.monotonic()))

    def scan(self, directory: Path) -> None:
        """Every file under ``directory`` becomes a candidate (the start, and a folder moved in)."""
        for root, dirs, names in os.walk(directory):
            here = Path(root)
            dirs[:] = [d for d in dirs if self.folder.recursive and not d.startswith(".")
                       and here / d != self.folder.out_dir]
            for name in names:
                self.notice(here / name)

    # ---- the loop ----

    def _run(self) -> None:
        while not self._stopping.wait(TICK):
            try:
                self._settle()
                self._follow()
            except Exception:  # one bad file must not end the watch
                log.exception("watch %s", self.folder.id)

    def _settle(self) -> None:
        now = time.monotonic()
        with self._lock:
            items = list(self.candidates.items())
        for rel, seen in items:
            if self._stopping.is_set():
                return
            try:
                st = (self.folder.in_dir / rel).lstat()  # a link is never taken, whatever it leads to
            except OSError:  # gone again (a temp file renamed, a download canceled)
                self._drop(rel)
                continue
            if not stat.S_ISREG(st.st_mode):
                self._drop(rel)
            elif (st.st_size, st.st_mtime_ns) != (seen.size, seen.mtime_ns):
                with self._lock:
                    self.candidates[rel] = _Candidate(st.st_size, st.st_mtime_ns, now)
            elif now - seen.since >= self.settle_seconds:
                self._drop(rel)
                self._take(Version(rel, st.st_size, st.st_mtime_ns))

    def _drop(self, rel: PurePosixPath) -> None:
        with self._lock:
            self.candidates.pop(rel, None)

    def _take(self, version: Version) -> None:
        """Hash the file, store a copy, claim it in the ledger, and make its workflow."""
        if self.ledger.known(self.folder.id, version):
            return
        path = self.folder.in_dir / version.rel_path
        if not within(path, self.folder.in_dir):  # a folder on the way is a link: it leads elsewhere
            return
        try:
            digest = sha256_of(path)
            stored = self.service.files.add(path, path.name, key_id=None, kind="upload", move=False, sha256=digest)
            st = path.lstat()
        except OSError:
            return  # gone while being read: nothing to take
        if not stat.S_ISREG(st.st_mode) or not within(path, self.folder.in_dir):  # made a link while read
            self.service.files.delete(stored.id)
            return
        if (st.st_size, st.st_mtime_ns) != (version.size, version.mtime_ns):  # written to meanwhile: wait again
            self.service.files.delete(stored.id)
            with self._lock:
                self.candidates[version.rel_path] = _Candidate(st.st_size, st.st_mtime_ns, time.monotonic())
            return
        row_id = self.ledger.claim(self.folder.id, version, digest)
        if row_id is None:  # another process watching this folder has it
            self.service.files.delete(stored.id)
            return
        taken = Taken(row_id, version, None)
        try:
            workflow = self.service.workflows.create(Caller(), [stored.id], preset=self.folder.preset,
                                                     tag=f"watch:{self.folder.id}")
        except ServiceError as exc:  # refused before running: a format the preset cannot take, say
            self._failed(taken, exc.detail)
            return
        self.ledger.started(row_id, workflow.id)
        self.pending[workflow.id] = Taken(row_id, version, workflow.id)

    def _follow(self) -> None:
        if not self.pending:
            return
        found = {w.id: w for w in self.service.workflows.many(list(self.pending))}  # a few reads for them all
        for workflow_id, taken in list(self.pending.items()):
            workflow = found.get(workflow_id)
            if workflow is None:  # deleted from under us
                del self.pending[workflow_id]
                self._failed(taken, "The conversion was deleted before it finished.")
                continue
            if not workflow.status.finished:
                continue
            del self.pending[workflow_id]
            if workflow.status == JobStatus.DONE:
                self._deliver(taken, workflow_id)
            else:
                self._failed(taken, workflow.error_message or f"The conversion was {workflow.status.lower()}.")

    # ---- endings ----

    def _deliver(self, taken: Taken, workflow_id: str) -> None:
        """Copy the outputs beside each other under temp names, claim the row, then give them their names."""
        rel = taken.version.rel_path
        target_dir = self.folder.out_dir / rel.parent
        staged: list[tuple[str, Path]] = []
        if not within(target_dir, self.folder.out_dir):
            self._failed(taken, f"The output folder {rel.parent} leads outside {self.folder.out_dir} (a link); "
                                "nothing was written.")
            return
        try:
            target_dir.mkdir(parents=True, exist_ok=True)
            for name, source in self.service.workflows.result_paths(workflow_id):
                part = target_dir / f".{secrets.token_hex(6)}.filekiln-part"
                shutil.copyfile(source, part)
                staged.append((name, part))
        except (OSError, ServiceError) as exc:
            _discard(staged)
            self._failed(taken, getattr(exc, "detail", None) or f"Could not write the output: {exc}")
            return
        if not self.ledger.finish(taken.row_id, FileStatus.DONE):  # another process delivered it
            _discard(staged)
            return
        outputs = [_place(part, target_dir / name) for name, part in staged]
        note = self._after(taken.version)
        self.report(WatchResult(self.folder.id, rel, True, outputs, note))

    def _after(self, version: Version) -> str | None:
        """--after move or delete, for the version converted only (a newer one is taken again)."""
        if self.folder.after == "keep":
            return None
        path = self.folder.in_dir / version.rel_path
        try:
            st = path.stat()
            if (st.st_size, st.st_mtime_ns) != (version.size, version.mtime_ns):
                return None
            if self.folder.after == "delete":
                path.unlink()
            else:
                target = free_name(self.folder.in_dir / DONE_DIR / version.rel_path)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
        except OSError as exc:
            log.warning("could not %s %s: %s", self.folder.after, path, exc)
            return f"could not {self.folder.after} the input: {exc}"
        return None

    def _failed(self, taken: Taken, message: str) -> None:
        """The input stays; ``failed/<rel subdir>/<name>.error.txt`` says why."""
        if not self.ledger.finish(taken.row_id, FileStatus.FAILED, message):
            return
        rel = taken.version.rel_path
        report: Path | None = self.folder.out_dir / FAILED_DIR / rel.parent / f"{rel.name}.error.txt"
        if report is not None and not within(report.parent, self.folder.out_dir):
            log.warning("not writing %s: it leads outside %s (a link)", report, self.folder.out_dir)
            report = None
        text = (f"FileKiln could not convert {rel} with the preset {self.folder.preset!r}.\n\n{message}\n\n"
                f"The file was left where it was; save it again (or a new version) to try once more.\n")
        try:
            if report is not None:
                report.parent.mkdir(parents=True, exist_ok=True)
                part = report.with_name(f".{secrets.token_hex(6)}.filekiln-part")
                part.write_text(text, encoding="utf-8")
                os.replace(part, report)  # the newest failure of a file replaces its older report
        except OSError as exc:
            log.warning("could not write %s: %s", report, exc)
        self.report(WatchResult(self.folder.id, rel, False, [], message, report))


class _Events(FileSystemEventHandler):
    """Marks candidates; a folder created or moved in is scanned (its files may come without events)."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("deleted", "opened", "closed_no_write"):
            return
        raw = event.dest_path if event.event_type == EVENT_TYPE_MOVED else event.src_path
        path = Path(os.fsdecode(raw))
        if not event.is_directory:
            self.watcher.notice(path)
        elif (event.event_type in (EVENT_TYPE_CREATED, EVENT_TYPE_MOVED) and self.watcher.folder.recursive
              and self.watcher.relative(path) is not None):  # not hidden, not the output dir
            self.watcher.scan(path)


def within(path: Path, root: Path) -> bool:
    """``path`` (whether or not it exists yet) stays inside ``root`` once every link on the way is
    followed: a link planted in the watched or the output folder cannot lead a read or a write elsewhere."""
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def _place(part: Path, target: Path) -> Path:
    """Give ``part`` the first free name from ``target`` on, never replacing a file already there."""
    while True:
        candidate = free_name(target)
        try:
            os.link(part, candidate)  # fails if the name was taken meanwhile: then try the next
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links
            os.replace(part, candidate)
            return candidate
        part.unlink()
        return candidate


def _discard(staged: list[tuple[str, Path]]) -> None:
    for _, part in staged:
        part.unlink(missing_ok=True)
