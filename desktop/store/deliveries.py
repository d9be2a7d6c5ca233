"""Where a finished job's results go on the user's disk, remembered across restarts.

The service keeps results in its store under ids; a job made in the app also has a
delivery: a folder and a clash policy. When the job is DONE, its results are copied
there. Deliveries live in ``deliveries.json`` in the data dir, so a job queued before
the app was closed still lands in the chosen folder when it finishes after a restart.
Each result is named by the delivery's template (:mod:`desktop.store.naming`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from converters.base import free_name
from desktop.store.atomic import atomic_write_text, read_json
from desktop.store.naming import render_name

# what to do when a file of the result's name is already in the folder
CLASH_POLICIES = ("rename", "overwrite", "skip")


@dataclass(frozen=True)
class Delivery:
    job_id: str
    folder: str
    policy: str  # one of CLASH_POLICIES
    batch: str = ""
    inputs: tuple[str, ...] = ()  # the user's original files (never overwritten)
    delivered: tuple[str, ...] | None = None  # None until the results were copied
    skipped: tuple[str, ...] = ()
    error: str | None = None
    tool: str = ""
    template: str = ""  # how results are named (desktop.store.naming); "" keeps the tool's names
    output_bytes: int | None = None  # what was written, once it was
    input_bytes: int | None = None  # the inputs' size then, to say how much smaller or bigger

    @property
    def pending(self) -> bool:
        return self.delivered is None and self.error is None


@dataclass
class DeliveryStore:
    path: Path
    _items: dict[str, Delivery] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, path: Path) -> DeliveryStore:
        store = cls(path)
        for job_id, item in read_json(path).items():
            try:
                store._items[job_id] = Delivery(
                    job_id=job_id, folder=item["folder"], policy=item["policy"], batch=item.get("batch", ""),
                    inputs=tuple(item.get("inputs", ())),
                    delivered=None if item.get("delivered") is None else tuple(item["delivered"]),
                    skipped=tuple(item.get("skipped", ())), error=item.get("error"),
                    tool=str(item.get("tool", "")), template=str(item.get("template", "")),
                    output_bytes=_int_or_none(item.get("output_bytes")),
                    input_bytes=_int_or_none(item.get("input_bytes")))
            except (KeyError, TypeError):
                continue
        return store

    def _save(self) -> None:
        data = {k: {kk: vv for kk, vv in asdict(v).items() if kk != "job_id"} for k, v in self._items.items()}
        atomic_write_text(self.path, json.dumps(data, indent=1, sort_keys=True))

    def add(self, delivery: Delivery) -> None:
        with self._lock:
            self._items[delivery.job_id] = delivery
            self._save()

    def get(self, job_id: str) -> Delivery | None:
        with self._lock:
            return self._items.get(job_id)

    def finish(self, job_id: str, delivered: Sequence[Path], skipped: Sequence[str], error: str | None = None,
               output_bytes: int | None = None, input_bytes: int | None = None) -> None:
        with self._lock:
            item = self._items.get(job_id)
            if item is not None:
                self._items[job_id] = replace(item, delivered=tuple(str(p) for p in delivered),
                                              skipped=tuple(skipped), error=error, output_bytes=output_bytes,
                                              input_bytes=input_bytes)
                self._save()

    def remove(self, job_ids: Iterable[str]) -> None:
        with self._lock:
            changed = [self._items.pop(j, None) for j in job_ids]
            if any(changed):
                self._save()

    def job_ids(self) -> list[str]:
        with self._lock:
            return list(self._items)


def folder_inside(folder: Path | None, subfolder: Path | None) -> Path | None:
    """Where a group's results go: ``subfolder`` inside the chosen ``folder``, so that the results of
    a dropped folder keep its tree; ``None`` (next to the input, where the tree is kept already) stays."""
    if folder is None or subfolder is None:
        return folder
    return folder / subfolder


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def sizes_of(paths: Iterable[Path]) -> int | None:
    """The total size of ``paths``; ``None`` when one cannot be read (moved, deleted)."""
    try:
        return sum(p.stat().st_size for p in paths)
    except OSError:
        return None


def copy_results(results: Sequence[tuple[str, Path]], folder: Path, policy: str,
                 protected: Iterable[Path] = (), template: str = "", tool: str = "") -> tuple[list[Path], list[str]]:
    """Copy ``(name, stored path)`` results into ``folder``, each named by ``template`` (empty: as the
    tool named it); returns (written paths, skipped names).

    Each copy goes to a temp file in ``folder`` first and is renamed into place, so a
    reader never sees half a file and an overwritten file is replaced in one step.
    """
    folder.mkdir(parents=True, exist_ok=True)
    protected = list(protected)
    written: list[Path] = []
    skipped: list[str] = []
    for given, source in results:
        name = render_name(template, Path(given).name, tool)
        target = resolve_target(folder, name, policy, protected=protected)
        if target is None:
            skipped.append(name)
            continue
        fd, tmp = tempfile.mkstemp(prefix=".filekiln-", suffix=".part", dir=folder)
        os.close(fd)
        try:
            shutil.copyfile(source, tmp)
            if policy == "rename":
                # a file may have appeared meanwhile: pick the name again, right before the rename
                target = resolve_target(folder, name, "rename", protected=protected) or target
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(target)
    return written, skipped


def resolve_target(folder: Path, name: str, policy: str, exists: Callable[[Path], bool] = Path.exists,
                   protected: Iterable[Path] = ()) -> Path | None:
    """Where a result called ``name`` goes in ``folder`` under a clash ``policy``; ``None`` means skip.

    ``rename`` picks ``name-2.ext``, ``name-3.ext`` ... (``free_name``, as the command line does when
    it saves results); ``overwrite`` replaces an
    earlier file; ``skip`` leaves it. A ``protected`` path (the job's own inputs) is
    never overwritten: a clash with one is renamed whatever the policy.
    """
    if policy not in CLASH_POLICIES:
        raise ValueError(f"unknown clash policy {policy!r}")
    target = folder / name
    guarded = {p.absolute() for p in protected}
    if not exists(target):
        return target
    if policy == "skip" and target.absolute() not in guarded:
        return None
    if policy == "overwrite" and target.absolute() not in guarded:
        return target
    return free_name(target, exists)
