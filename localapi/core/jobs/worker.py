"""The worker side of a job: claim it, run it supervised in a child process, record how it ended.

Read :meth:`JobWorker.execute` top to bottom: every way a job can end is one branch there. The API
side (create, read, cancel, delete) is :mod:`localapi.core.jobs.service`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import queue
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from converters.base import ResidentEngine, Tool
from converters.catalogue import Catalogue
from localapi.core.db import Database, now
from localapi.core.errors import StorageUnavailable
from localapi.core.files import FileStore, StoredFile
from localapi.core.jobs.events import PROGRESS, TYPE_OF_STATUS, EventFeed, append
from localapi.core.jobs.messages import InputSpec, JobSpec
from localapi.core.jobs.progress import ProgressGate
from localapi.core.jobs.records import Job
from localapi.core.jobs.runner import Child, ChildPool, Outcome, run_supervised
from localapi.core.jobs.sealed import ParamsUnreadable, Sealer
from localapi.core.jobs.workdirs import OUT, SPARE, WorkDirs
from localapi.core.processes import process_identity, process_is_gone
from localapi.core.states import JobStatus

log = logging.getLogger("filekiln.worker")

MAX_ATTEMPTS = 2  # a job interrupted by a dead worker is retried once
STALE_HEARTBEAT = 60.0


@dataclass
class JobSettings:
    jobs_dir: Path
    models_dir: Path
    tool_settings: dict[str, Any] = field(default_factory=dict)
    memory_limit_mb: int = 0
    tool_timeouts: dict[str, float] = field(default_factory=dict)
    max_running_per_key: int = 0  # 0: no cap beyond the free workers
    warm_children: bool = True  # start conversion children ahead of the first job (Settings.warm_children)


class EngineSlots:
    """Per-worker homes for the engines tools keep running between jobs (:class:`ResidentEngine`).

    A worker thread borrows one slot set for each job; the job's engines find their instance there
    and leave it running for the next job of that worker. A job that did not end cleanly may have
    left its engine mid-task, so its slot's engines are stopped; all of them are when workers stop.
    """

    def __init__(self, base: Path, engines: list[ResidentEngine]) -> None:
        self.base = base
        self.engines = engines
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()

    def open(self, count: int) -> None:
        self.close()
        for n in range(count):
            self._stop(n)  # what a crashed run left behind
            self._free.put(n)

    def close(self) -> None:
        while True:
            try:
                self._stop(self._free.get_nowait())
            except queue.Empty:
                return

    def dirs(self, n: int, tool: Tool) -> dict[str, str]:
        return {e.name: str(self.base / e.name / f"slot-{n}") for e in tool.resident}

    def borrow(self) -> int | None:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            return None  # more jobs than slots (a direct call outside the worker pool): no resident engine

    def give_back(self, n: int | None, tool: Tool | None, clean: bool) -> None:
        if n is None:
            return
        if not clean and tool is not None:
            for engine in tool.resident:
                engine.stop(self.base / engine.name / f"slot-{n}")
        self._free.put(n)

    def _stop(self, n: int) -> None:
        for engine in self.engines:
            engine.stop(self.base / engine.name / f"slot-{n}")


class ChildLease:
    """A warm conversion child taken from the pool before a claim. The claimed job's supervisor takes
    it (:meth:`take`); if no job did, :meth:`release` puts it back in the pool."""

    def __init__(self, pool: ChildPool | None) -> None:
        self.pool = pool
        self.child = pool.take_warm() if pool is not None else None

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def take(self) -> Child | None:
        child, self.child = self.child, None
        return child

    def release(self) -> None:
        child = self.take()
        if child is not None and self.pool is not None:
            self.pool.put_back(child)


class JobWorker:
    """Runs queued jobs: one call of :meth:`run_next` per message the queue hands a worker thread."""

    def __init__(self, db: Database, files: FileStore, catalogue: Catalogue, settings: JobSettings,
                 enqueue: Callable[[str], None], events: EventFeed, sealer: Sealer,
                 identity: str | None = None) -> None:
        self.db = db
        self.sealer = sealer
        self.events = events
        self.files = files
        self.catalogue = catalogue
        self.settings = settings
        self.enqueue = enqueue
        self.identity = identity or process_identity()
        self._served: dict[str | None, float] = {}  # caller -> when this process last started one of its jobs
        self.children: ChildPool | None = None  # warm children, while workers run
        self.ended: Callable[[Job], None] = lambda job: None  # told of every job run here, once it has ended
        # tools whose jobs this process leaves to others: it cannot run them, or not in full (jobs/registry.py)
        self.excluded: tuple[str, ...] = ()
        engines = {e.name: e for tool in catalogue for e in tool.resident}
        self.slots = EngineSlots(settings.models_dir.parent / "engines", list(engines.values()))
        settings.jobs_dir.mkdir(parents=True, exist_ok=True)
        self.work_dirs = WorkDirs(settings.jobs_dir, identity=self.identity)

    # ---- lifecycle of the worker pool ----

    def start(self, workers: int) -> None:
        self.children = ChildPool(workers, self.settings.jobs_dir / "_children", ahead=self.settings.warm_children)
        self.children.fill()
        self.slots.open(workers)
        self.work_dirs.keep = workers

    def stop(self) -> None:
        if self.children is not None:
            self.children.close()
            self.children = None
        self.slots.close()
        self.work_dirs.close()

    # ---- which job next ----

    def run_next(self, stopping: Callable[[], bool] = lambda: False) -> JobStatus | None:
        """Run the fairest queued job (see :meth:`_claim_next`); None when there is none to run now.

        A queue message means "a job is waiting", not which one: the job table decides, so one key's
        thousand queued jobs do not make another key's job wait behind them all.
        """
        # A warm child taken now is recorded by the claim itself (its pid, and 1 %: the job has its
        # child): one write and one event fewer than recording it once the job has started.
        lease = ChildLease(self.children)
        try:
            job = self._claim_next(lease.pid)
            if job is None:
                return None
            try:
                return self._run_claimed(job, stopping, lease)
            finally:
                if self.settings.max_running_per_key:
                    self._wake_if_waiting()  # a job its key's cap held back may run now
        finally:
            lease.release()

    def _claim_next(self, child_pid: int | None = None) -> Job | None:
        """Claim the next job, fairly between callers (each key, and the desktop and CLI as one more).

        The caller with the fewest running jobs goes first, then the one this process served least
        recently (round robin), then the one whose job has waited longest; callers at their cap of
        running jobs (``max_running_per_key``) wait. Within a caller, jobs run in the order made. Jobs of
        the tools this process leaves to others (``excluded``) are not looked at. ``child_pid``: the
        conversion child the job will run in, when the worker has one already. Returns the job as claimed.
        """
        cap = self.settings.max_running_per_key
        excluded = self.excluded
        takes = f" and tool not in ({','.join('?' * len(excluded))})" if excluded else ""
        with self.events.changing() as conn:
            # each caller's running jobs, and when its oldest queued job (of the tools taken here) was made:
            # one statement, each half read from the index in order (one grouping over both would sort
            # the whole backlog: 3x slower with 20,000 jobs queued)
            running: dict[str | None, int] = {}
            oldest: dict[str | None, float] = {}
            for row in conn.execute(
                    "select key_id, count(*) as running, null as first from jobs where status = ? group by key_id"
                    " union all select key_id, 0 as running, min(created_at) as first from jobs"
                    f" where status = ?{takes} group by key_id", (JobStatus.PROCESSING, JobStatus.QUEUED, *excluded)):
                if row["first"] is None:
                    running[row["key_id"]] = row["running"]
                else:
                    oldest[row["key_id"]] = row["first"]
            waiting = [(running.get(key_id, 0), self._served.get(key_id, 0.0), first, key_id)
                       for key_id, first in oldest.items()]
            waiting = [w for w in waiting if not cap or w[0] < cap]
            if not waiting:
                return None
            key_id = min(waiting, key=lambda w: w[:3])[3]
            self._served[key_id] = time.monotonic()
            row = conn.execute(f"select id from jobs where status = ? and key_id is not distinct from ?{takes}"
                               " order by created_at, id limit 1", (JobStatus.QUEUED, key_id, *excluded)).fetchone()
            t = now()
            conn.execute(
                "update jobs set status = ?, started_at = ?, updated_at = ?, progress = ?, attempts = attempts + 1,"
                " worker = ?, heartbeat_at = ?, child_pid = ? where id = ?",
                (JobStatus.PROCESSING, t, t, 0 if child_pid is None else 1, self.identity, t, child_pid, row["id"]))
            job = append(conn, row["id"], TYPE_OF_STATUS[JobStatus.PROCESSING])
        assert job is not None  # claimed just now, in this transaction
        return job

    def _wake_if_waiting(self) -> None:
        row = self.db.one("select id from jobs where status = ? limit 1", JobStatus.QUEUED)
        if row is not None:
            self.enqueue(row["id"])

    # ---- one job ----

    def _run_claimed(self, job: Job, stopping: Callable[[], bool], lease: ChildLease) -> JobStatus | None:
        """Run a job this worker has claimed to its end; returns the final status."""
        tool = self.catalogue.get(job.tool)
        work = self.work_dirs.take(job.id)
        out_dir = work / OUT
        ended: JobStatus | None = None
        try:
            if tool is None:
                outcome = Outcome(JobStatus.FAILED, "unknown_tool", f"The tool {job.tool} is no longer installed.")
            else:
                outcome = self._run(job, tool, out_dir, work / "child.log", stopping, lease)
            match outcome.status:
                case JobStatus.DONE:
                    ended = self._finish_done(job, out_dir, work, outcome.notes)
                    return ended
                case JobStatus.CANCELED if stopping():  # the worker is shutting down: run it next time
                    self._requeue(job.id, count_attempt=False)
                    return JobStatus.QUEUED
                case JobStatus.FAILED:
                    self._finish(job.id, JobStatus.FAILED, outcome.error_code, outcome.message)
                    return JobStatus.FAILED
                case _:
                    return JobStatus.CANCELED  # the status was already set by whoever canceled
        except (StorageUnavailable, ParamsUnreadable) as exc:
            self._finish(job.id, JobStatus.FAILED, exc.code, exc.detail)
            return JobStatus.FAILED
        except OSError as exc:
            code = "disk_full" if getattr(exc, "errno", None) == 28 else "io_error"
            self._finish(job.id, JobStatus.FAILED, code, f"Could not write the result: {exc.strerror or exc}.")
            return JobStatus.FAILED
        finally:
            self.work_dirs.give_back(work, reuse=ended == JobStatus.DONE)
            self.ended(job)

    def _load(self, job_id: str) -> Job:
        row = self.db.one("select * from jobs where id = ?", job_id)
        assert row is not None  # just failed here (recover), and a delete cancels first
        return Job.from_row(row)

    def spec_for(self, job: Job, tool: Tool, out_dir: Path, slots: dict[str, str]) -> JobSpec:
        inputs = []
        for file_id in job.input_file_ids:
            f = self.files.get(file_id, any_owner=True)
            # in place in the data dir; from a bucket, into the job's scratch dir
            path = self.files.fetch(f.id, out_dir.parent / "in")
            inputs.append(InputSpec(str(path), f.format or "", f.original_name))
        row = self.db.one("select secret_params from jobs where id = ?", job.id)
        params = {**job.params, **self.sealer.unseal(row["secret_params"] if row else None)}
        return JobSpec(tool=tool.id, inputs=inputs, params=params,
                       output_format=job.output_format or tool.produces[0], out_dir=str(out_dir),
                       models_dir=str(self.settings.models_dir), settings=dict(self.settings.tool_settings),
                       slots=slots, memory_limit_mb=self.settings.memory_limit_mb)

    def _run(self, job: Job, tool: Tool, out_dir: Path, log_path: Path, stopping: Callable[[], bool],
             lease: ChildLease) -> Outcome:
        slot = self.slots.borrow() if tool.resident else None
        outcome = Outcome(JobStatus.FAILED)
        try:
            spec = self.spec_for(job, tool, out_dir, self.slots.dirs(slot, tool) if slot is not None else {})
            outcome = self._supervise(job, tool, spec, log_path, stopping, lease)
        finally:
            self.slots.give_back(slot, tool, clean=outcome.status == JobStatus.DONE)
        names = {i.path: i.name for i in spec.inputs}
        return dataclasses.replace(
            outcome, message=self.public(outcome.message, names) if outcome.message else outcome.message,
            notes=[self.public(note, names) for note in outcome.notes])

    def _supervise(self, job: Job, tool: Tool, spec: JobSpec, log_path: Path,
                   stopping: Callable[[], bool], lease: ChildLease) -> Outcome:
        child = lease.take()
        gate = ProgressGate()
        if child is not None:  # a warm child: the claim showed 1 %
            gate.started(1, now())

        def write_progress(value: int, t: float) -> None:
            self.events.change(job.id, PROGRESS, "update jobs set progress = ?, updated_at = ?, heartbeat_at = ?"
                               " where id = ? and status = ?", value, t, t, job.id, JobStatus.PROCESSING)

        def on_progress(fraction: float) -> None:
            t = now()
            if (value := gate.offer(min(99, 1 + int(fraction * 98)), t)) is not None:
                write_progress(value, t)

        def should_cancel() -> bool:
            if stopping():
                return True
            row = self.db.one("select status from jobs where id = ?", job.id)
            return row is None or row["status"] != JobStatus.PROCESSING

        def heartbeat() -> None:
            t = now()
            if (value := gate.due(t)) is not None:  # a value held back at the last report, with its event
                write_progress(value, t)
                return
            done = gate.shown  # what the job's readers were told, and no more
            self.db.execute("update jobs set heartbeat_at = ?, progress = case when progress > ? then progress"
                            " else ? end where id = ? and status = ?", t, done, done, job.id, JobStatus.PROCESSING)

        def started(pid: int) -> None:
            """The child has the job: record it (a dead worker's child is found by it) and show 1 %."""
            t = now()
            gate.started(1, t)
            self.events.change(job.id, PROGRESS, "update jobs set child_pid = ?, progress = 1, updated_at = ?,"
                               " heartbeat_at = ? where id = ? and status = ?", pid, t, t, job.id,
                               JobStatus.PROCESSING)

        return run_supervised(spec, log_path=log_path,
                              timeout=self.settings.tool_timeouts.get(tool.id, tool.timeout_seconds),
                              on_progress=on_progress, should_cancel=should_cancel, on_tick=heartbeat,
                              pool=self.children, on_start=started, child=child)

    def public(self, text: str, names: dict[str, str]) -> str:
        """An engine's words without the data dir's layout: stored inputs by their names, other paths elided."""
        for path, name in names.items():
            text = text.replace(path, name)
        return text.replace(str(self.settings.jobs_dir.parent), "…")  # the data dir

    def _finish_done(self, job: Job, out_dir: Path, work: Path, notes: list[str]) -> JobStatus:
        outputs = sorted(p for p in out_dir.iterdir() if p.is_file())
        if not outputs:
            self._finish(job.id, JobStatus.FAILED, "no_output", "The tool finished without producing a file.")
            return JobStatus.FAILED
        bundle_path: Path | None = None
        if len(outputs) > 1:
            bundle_path = work / "bundle.zip"
            # strict_timestamps=False: a file dated before 1980 (an archive entry's date) is stored as 1980
            with zipfile.ZipFile(bundle_path, "w", zipfile.ZIP_DEFLATED, strict_timestamps=False) as zf:
                for p in outputs:
                    zf.write(p, p.name)
        stored: list[StoredFile] = []  # the results, then the bundle
        try:
            for p in outputs:
                stored.append(self.files.put(p, p.name, key_id=job.key_id, kind="result", job_id=job.id))
            if bundle_path is not None:
                stem = Path(self.files.get(job.input_file_ids[0], any_owner=True).original_name).stem or "results"
                stored.append(self.files.put(bundle_path, f"{stem}-{job.tool}.zip", key_id=job.key_id,
                                             kind="bundle", job_id=job.id, fmt="zip"))
            bundle_id = stored[-1].id if bundle_path is not None else None
            # recorded with the job's end, in one transaction: a job is DONE with its files, or neither is there
            t = now()
            with self.events.changing() as conn:
                changed = conn.execute(
                    "update jobs set status = ?, progress = 100, result_file_ids = ?, bundle_file_id = ?, notes = ?,"
                    " finished_at = ?, updated_at = ?, secret_params = null where id = ? and status = ?",
                    (JobStatus.DONE, json.dumps([f.id for f in stored[:len(outputs)]]), bundle_id,
                     json.dumps(notes), t, t, job.id, JobStatus.PROCESSING)).rowcount
                if changed:
                    for f in stored:
                        self.files.record(conn, f)
                    append(conn, job.id, TYPE_OF_STATUS[JobStatus.DONE])
        except BaseException:
            self._discard(stored, unless_recorded=True)
            raise
        if not changed:  # canceled (or deleted) while the results were being stored
            self._discard(stored)
            return JobStatus.CANCELED
        return JobStatus.DONE

    def _discard(self, files: list[StoredFile], unless_recorded: bool = False) -> None:
        """The bytes of results put in the store but not recorded. ``unless_recorded``: after a failure,
        which may have come after the commit (a lost connection), the database says whether they were."""
        if unless_recorded and files:
            try:
                if self.db.one("select id from files where id = ?", files[0].id) is not None:
                    return
            except Exception:
                log.warning("could not tell whether the results of a failed end were recorded; kept", exc_info=True)
                return
        for f in files:
            try:
                self.files.discard(f)
            except Exception:
                log.warning("could not remove the unrecorded result %s", f.id, exc_info=True)

    def _finish(self, job_id: str, status: JobStatus, code: str | None, message: str | None) -> None:
        t = now()
        self.events.change(
            job_id, TYPE_OF_STATUS[status],
            "update jobs set status = ?, error_code = ?, error_message = ?, finished_at = ?, updated_at = ?,"
            " secret_params = null where id = ? and status = ?", status, code, message, t, t, job_id,
            JobStatus.PROCESSING)

    def _requeue(self, job_id: str, *, count_attempt: bool) -> None:
        self.events.change(
            job_id, TYPE_OF_STATUS[JobStatus.QUEUED],
            "update jobs set status = ?, progress = 0, worker = null, updated_at = ?"
            + ("" if count_attempt else ", attempts = case when attempts > 0 then attempts - 1 else 0 end")
            + " where id = ? and status = ?", JobStatus.QUEUED, now(), job_id, JobStatus.PROCESSING)
        self.enqueue(job_id)

    # ---- recovery: what a dead worker left ----

    def recover(self) -> dict[str, int]:
        """Retry once, or fail, jobs whose worker died mid-run (same host and gone, or no heartbeat)."""
        counts = {"retried": 0, "interrupted": 0}
        t = now()
        rows = self.db.all("select id, worker, heartbeat_at, attempts from jobs where status = ?",
                           JobStatus.PROCESSING)
        for row in rows:
            stale = row["heartbeat_at"] is None or t - row["heartbeat_at"] > STALE_HEARTBEAT
            if not (process_is_gone(row["worker"]) or stale):
                continue
            if row["attempts"] < MAX_ATTEMPTS:
                self._requeue(row["id"], count_attempt=True)
                counts["retried"] += 1
            else:
                self._finish(row["id"], JobStatus.FAILED, "interrupted",
                             "The worker running this job stopped unexpectedly, twice.")
                self.ended(self._load(row["id"]))
                counts["interrupted"] += 1
            shutil.rmtree(self.settings.jobs_dir / row["id"], ignore_errors=True)
        return counts

    def requeue_all_queued(self) -> int:
        rows = self.db.all("select id from jobs where status = ? order by created_at", JobStatus.QUEUED)
        for row in rows:
            self.enqueue(row["id"])
        return len(rows)

    def clean_work_dirs(self) -> None:
        """Remove work dirs of jobs that are not running, and spare ones of processes gone (leftovers of a crash)."""
        running = {r["id"] for r in self.db.all("select id from jobs where status = ?", JobStatus.PROCESSING)}
        for entry in os.scandir(self.settings.jobs_dir):
            if entry.name not in running and entry.name not in ("_children", SPARE):
                shutil.rmtree(entry.path, ignore_errors=True)
        self.work_dirs.clean()
