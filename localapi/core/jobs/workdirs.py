"""Each running job's scratch dir, ``jobs/<job id>``, with ``out/`` inside for the tool's results.

Making a directory costs far more than renaming one on common filesystems (about a third of a
millisecond of CPU on ext4, twice a job, against a few microseconds for a rename), and a small job
pays it on top of a conversion of a few milliseconds. So a job's dir is a spare one renamed into
place, and when the job ends it is emptied and renamed back to wait for the next job of this process.
Outside a job nothing is left under the job's name, as before; spares live in ``jobs/_spare``, named
after the process that owns them: its workers' stop removes them, and a process that did not stop (a
crash, a kill) has them removed at the next start.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import threading
from pathlib import Path

from localapi.core.processes import process_identity, process_is_gone

log = logging.getLogger("filekiln.worker")

SPARE = "_spare"
OUT = "out"
_numbers = itertools.count()  # of the spares this process names, whichever WorkDirs names them


class WorkDirs:
    def __init__(self, base: Path, keep: int = 4, identity: str | None = None) -> None:
        self.base = base
        self.spares = base / SPARE
        self.keep = keep  # spares kept at most: one for each worker thread is all a steady load needs
        # a spare's name says whose it is (':' is not a file name character everywhere)
        self._prefix = (identity or process_identity()).replace(":", "+") + "+"
        self._free: list[Path] = []
        self._lock = threading.Lock()

    def take(self, job_id: str) -> Path:
        """The job's dir, with an empty ``out/``: a spare renamed into place, else made new."""
        work = self.base / job_id
        shutil.rmtree(work, ignore_errors=True)  # what an earlier attempt of this job left
        with self._lock:
            spare = self._free.pop() if self._free else None
        if spare is not None:
            try:
                spare.rename(work)
                return work
            except OSError:
                shutil.rmtree(spare, ignore_errors=True)
        (work / OUT).mkdir(parents=True)
        return work

    def give_back(self, work: Path, reuse: bool) -> None:
        """The job has ended: empty its dir and keep it as a spare, or remove it.

        ``reuse`` only for a job whose child answered that it finished: after a kill, a process it
        started might still write into the dir by a handle of its own, and the next job must not see that.
        """
        try:
            with self._lock:
                wanted = reuse and len(self._free) < self.keep
            if wanted:
                self._empty(work)
                spare = self.spares / f"{self._prefix}{next(_numbers)}"
                try:
                    work.rename(spare)
                except FileNotFoundError:  # the first spare of this data dir
                    self.spares.mkdir(exist_ok=True)
                    work.rename(spare)
                with self._lock:
                    self._free.append(spare)
                return
        except OSError as exc:
            log.debug("work dir %s not kept as a spare: %s", work, exc)
        shutil.rmtree(work, ignore_errors=True)

    @staticmethod
    def _empty(work: Path) -> None:
        """Remove all but an empty ``out/`` (results were moved out of it; anything left goes)."""
        for entry in _entries(work):
            if entry.name == OUT and entry.is_dir(follow_symlinks=False):
                for inner in _entries(entry.path):
                    _remove(inner)
            else:
                _remove(entry)
        (work / OUT).mkdir(exist_ok=True)

    def close(self) -> None:
        """Remove this process's spares (the workers have stopped)."""
        with self._lock:
            spares, self._free = self._free, []
        for spare in spares:
            shutil.rmtree(spare, ignore_errors=True)

    def clean(self) -> None:
        """Remove the spares of processes that are gone (at a start: what a crash or a kill left)."""
        try:
            entries = list(os.scandir(self.spares))
        except FileNotFoundError:
            return
        for entry in entries:
            host, pid, created, _ = (entry.name.split("+") + ["", "", "", ""])[:4]
            if not entry.name.startswith(self._prefix) and process_is_gone(f"{host}:{pid}:{created}"):
                shutil.rmtree(entry.path, ignore_errors=True)


def _entries(path: Path | str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as entries:
        return list(entries)


def _remove(entry: os.DirEntry[str]) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        os.unlink(entry.path)
