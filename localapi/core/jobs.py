"""Jobs: creation, state transitions, results. The job table is the source of truth."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import socket
import sqlite3
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from pydantic import ValidationError

from converters.base import ConversionError, InputFile, Tool, ToolEnv
from converters.catalogue import Catalogue
from converters.office import stop_slot
from converters.safety import check_input
from localapi.core.db import Database, new_id, now
from localapi.core.errors import (
    Conflict,
    FileTooLarge,
    InvalidParams,
    JobNotFinished,
    JobNotFound,
    QuotaExceeded,
    ServiceError,
    Unavailable,
    UnsupportedFormat,
)
from localapi.core.files import FileStore, StoredFile
from localapi.core.keys import ApiKey, today
from localapi.core.switches import Switches
from localapi.core.runner import ChildPool, Outcome, run_supervised

QUEUED, PROCESSING, DONE, FAILED, CANCELED = "QUEUED", "PROCESSING", "DONE", "FAILED", "CANCELED"
FINISHED = (DONE, FAILED, CANCELED)
MAX_ATTEMPTS = 2  # a job interrupted by a dead worker is retried once
STALE_HEARTBEAT = 60.0


@dataclass(frozen=True)
class Job:
    id: str
    key_id: str | None
    tool: str
    status: str
    progress: int
    output_format: str | None
    params: dict[str, Any]
    input_file_ids: list[str]
    result_file_ids: list[str]
    bundle_file_id: str | None
    error_code: str | None
    error_message: str | None
    notes: list[str]
    created_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    attempts: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Job:
        return cls(
            id=row["id"], key_id=row["key_id"], tool=row["tool"], status=row["status"],
            progress=row["progress"], output_format=row["output_format"], params=json.loads(row["params"]),
            input_file_ids=json.loads(row["input_file_ids"]), result_file_ids=json.loads(row["result_file_ids"]),
            bundle_file_id=row["bundle_file_id"], error_code=row["error_code"],
            error_message=row["error_message"], notes=json.loads(row["notes"]), created_at=row["created_at"],
            started_at=row["started_at"], finished_at=row["finished_at"], updated_at=row["updated_at"],
            attempts=row["attempts"],
        )


@dataclass(frozen=True)
class JobPage:
    items: list[Job]
    next_cursor: str | None


@dataclass(frozen=True)
class Result:
    job: Job
    files: list[StoredFile]
    bundle: StoredFile | None


@dataclass
class Caller:
    """Who asks: a key, the local user (GUI/CLI, ``key=None``), or anyone holding a job id."""

    key: ApiKey | None = None
    any_owner: bool = False

    @property
    def key_id(self) -> str | None:
        return self.key.id if self.key else None

    def owns(self, key_id: str | None) -> bool:
        return self.any_owner or key_id == self.key_id


def worker_identity() -> str:
    proc = psutil.Process()
    return f"{socket.gethostname()}:{proc.pid}:{proc.create_time():.3f}"


def worker_is_dead(identity: str | None) -> bool:
    if not identity:
        return True
    host, _, rest = identity.partition(":")
    pid_text, _, created = rest.partition(":")
    if host != socket.gethostname():
        return False  # another machine: judged by its heartbeat only
    try:
        proc = psutil.Process(int(pid_text))
        return f"{proc.create_time():.3f}" != created
    except (psutil.NoSuchProcess, ValueError):
        return True


@dataclass
class JobSettings:
    jobs_dir: Path
    models_dir: Path
    tool_settings: dict[str, Any] = field(default_factory=dict)
    memory_limit_mb: int = 0
    tool_timeouts: dict[str, float] = field(default_factory=dict)


class JobService:
    def __init__(self, db: Database, files: FileStore, catalogue: Catalogue, settings: JobSettings,
                 enqueue: Callable[[str], None] = lambda job_id: None) -> None:
        self.db = db
        self.files = files
        self.catalogue = catalogue
        self.settings = settings
        self.enqueue = enqueue
        self.switches = Switches(db, self.tool_env)
        self.children: ChildPool | None = None  # warm children, while workers run
        self._slots: queue.SimpleQueue[Path] = queue.SimpleQueue()  # per-worker dirs for engines kept warm
        self.settings.jobs_dir.mkdir(parents=True, exist_ok=True)

    @property
    def tool_env(self) -> ToolEnv:
        return ToolEnv(models_dir=self.settings.models_dir, settings=self.settings.tool_settings)

    # ---- creation ----

    def validate(self, caller: Caller, tool_id: str, input_file_ids: Sequence[str],
                 params: dict[str, Any] | None, output_format: str | None) -> tuple[Tool, Any, str, list[StoredFile]]:
        """Everything that can be said about a job before it is queued; raises ServiceError."""

        if self.switches.maintenance:
            raise Unavailable("FileKiln is in maintenance mode; try again later.", code="maintenance",
                              headers={"Retry-After": "60"})
        tool = self.catalogue.get(tool_id)
        if tool is None:
            raise InvalidParams(f"Unknown tool {tool_id!r}.", code="unknown_tool",
                                errors={"tool": [f"unknown tool {tool_id!r}; see GET /tools"]})
        if tool.id in self.switches.disabled_tools():
            raise Unavailable(f"The tool {tool.id} is disabled.", code="tool_disabled", headers={"Retry-After": "60"})
        reason = tool.unavailable_reason(self.tool_env)
        if reason is not None:
            raise Unavailable(reason, code="tool_unavailable", headers={"Retry-After": "3600"})
        try:
            model = tool.params.model_validate(params or {})
        except ValidationError as exc:
            raise InvalidParams("The params are not valid for this tool.", errors=validation_errors(exc)) from None
        fmt = output_format or tool.produces[0]
        if fmt not in tool.produces:
            raise InvalidParams(f"{tool.id} cannot produce {fmt!r}.", errors={
                "outputFormat": [f"must be one of {', '.join(tool.produces)}"]})
        if not input_file_ids:
            raise InvalidParams("Give at least one input file.", errors={"inputFileIds": ["must not be empty"]})
        if len(input_file_ids) > tool.max_inputs:
            raise InvalidParams(f"At most {tool.max_inputs} inputs.", errors={
                "inputFileIds": [f"at most {tool.max_inputs} files"]})
        stored: list[StoredFile] = []
        for index, file_id in enumerate(input_file_ids):
            try:
                f = self.files.get(file_id, key_id=caller.key_id)
            except ServiceError:
                raise InvalidParams(f"Unknown input file {file_id!r}.", code="unknown_file", errors={
                    f"inputFileIds.{index}": [f"no file {file_id!r}"]}) from None
            if f.size_bytes > tool.max_input_size_bytes:
                raise FileTooLarge(f"{f.original_name} is larger than {tool.id}'s limit of "
                                   f"{tool.max_input_size_bytes} bytes.")
            if f.format not in tool.accepts:
                raise UnsupportedFormat(
                    f"{f.original_name} is {f.format or 'of an unknown type'} (judged by its content); "
                    f"{tool.id} accepts {', '.join(tool.accepts)}.")
            stored.append(f)
        inputs = [InputFile(self.files.path_of(f.id), f.format or "", f.original_name) for f in stored]
        try:
            for item in inputs:
                check_input(item.path, item.format)
            tool.precheck(inputs, model, self.tool_env)
        except ConversionError as exc:
            names = {str(item.path): item.name for item in inputs}
            raise InvalidParams(self._public(exc.message, names), code=exc.code) from None
        return tool, model, fmt, stored

    def create(self, caller: Caller, tool_id: str, input_file_ids: Sequence[str],
               params: dict[str, Any] | None = None, output_format: str | None = None) -> Job:
        tool, model, fmt, _ = self.validate(caller, tool_id, input_file_ids, params, output_format)
        job_id = new_id("job")
        t = now()
        with self.db.transaction() as conn:
            key = caller.key
            if key is not None:
                used_row = conn.execute("select jobs from usage where key_id = ? and day = ?",
                                        (key.id, today())).fetchone()
                used = used_row["jobs"] if used_row else 0
                if key.daily_job_quota is not None and used >= key.daily_job_quota:
                    raise QuotaExceeded(
                        f"This key's daily quota of {key.daily_job_quota} jobs is used up; it resets at 00:00 UTC.",
                        headers=quota_headers(key.daily_job_quota, used))
                conn.execute("insert into usage (key_id, day, jobs) values (?, ?, 1) "
                             "on conflict (key_id, day) do update set jobs = jobs + 1", (key.id, today()))
            conn.execute(
                "insert into jobs (id, key_id, tool, status, progress, output_format, params, input_file_ids,"
                " created_at, updated_at) values (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                (job_id, caller.key_id, tool.id, QUEUED, fmt,
                 json.dumps(model.model_dump(mode="json", by_alias=True, exclude_unset=True)),
                 json.dumps(list(input_file_ids)), t, t),
            )
        self.enqueue(job_id)
        return self.get(job_id, Caller(any_owner=True))

    # ---- reading ----

    def get(self, job_id: str, caller: Caller) -> Job:
        row = self.db.one("select * from jobs where id = ?", job_id)
        if row is None or not caller.owns(row["key_id"]):
            raise JobNotFound(f"No job {job_id!r}.")
        return Job.from_row(row)

    def page(self, caller: Caller, *, status: str | None = None, tool: str | None = None,
             limit: int = 50, cursor: str | None = None, everyone: bool = False) -> JobPage:
        """Newest first. ``cursor`` is the opaque value of a previous page's ``next_cursor``."""
        where: list[str] = []
        args: list[Any] = []
        if not everyone:
            where.append("key_id is ?")
            args.append(caller.key_id)
        if status:
            where.append("status = ?")
            args.append(status)
        if tool:
            where.append("tool = ?")
            args.append(tool)
        if cursor:
            created_text, _, last_id = cursor.partition("~")
            where.append("(created_at < ? or (created_at = ? and id < ?))")
            created = float(created_text)
            args.extend([created, created, last_id])
        sql = "select * from jobs"
        if where:
            sql += " where " + " and ".join(where)
        sql += " order by created_at desc, id desc limit ?"
        rows = self.db.all(sql, *args, limit + 1)
        items = [Job.from_row(r) for r in rows[:limit]]
        next_cursor = f"{items[-1].created_at!r}~{items[-1].id}" if len(rows) > limit else None
        return JobPage(items, next_cursor)

    def result(self, job_id: str, caller: Caller) -> Result:
        job = self.get(job_id, caller)
        if job.status != DONE:
            raise JobNotFinished(f"Job {job_id} is {job.status}, not DONE.", headers={"Retry-After": "1"})
        files = [self.files.get(fid, any_owner=True) for fid in job.result_file_ids]
        bundle = self.files.get(job.bundle_file_id, any_owner=True) if job.bundle_file_id else None
        return Result(job, files, bundle)

    # ---- changes ----

    def cancel(self, job_id: str, caller: Caller) -> Job:
        job = self.get(job_id, caller)
        changed = self.db.execute(
            "update jobs set status = ?, finished_at = ?, updated_at = ?, error_code = 'canceled',"
            " error_message = 'Canceled on request.' where id = ? and status in (?, ?)",
            CANCELED, now(), now(), job.id, QUEUED, PROCESSING)
        if not changed:
            raise Conflict(f"Job {job_id} is already {self.get(job_id, caller).status}.", code="job_finished")
        # a PROCESSING job's supervisor sees the status within 0.2 s, kills the child, removes output
        return self.get(job_id, caller)

    def delete(self, job_id: str, caller: Caller) -> None:
        job = self.get(job_id, caller)
        if job.status not in FINISHED:
            try:
                self.cancel(job_id, caller)
            except Conflict:
                pass
        job = self.get(job_id, caller)
        self.db.execute("delete from jobs where id = ?", job.id)
        for file_id in [*job.result_file_ids, *([job.bundle_file_id] if job.bundle_file_id else [])]:
            self.files.delete(file_id)

    def inputs_in_use(self, file_id: str) -> bool:
        row = self.db.one(
            "select 1 from jobs where status in (?, ?) and input_file_ids like ? limit 1",
            QUEUED, PROCESSING, f'%"{file_id}"%')
        return row is not None

    # ---- execution (called from a worker) ----

    def open_slots(self, count: int) -> None:
        """One slot per worker thread: an engine that outlives a job (LibreOffice) lives in a slot."""
        self.close_slots()
        base = self.settings.models_dir.parent / "office"
        for n in range(count):
            slot = base / f"slot-{n}"
            stop_slot(slot)  # a soffice left by a crashed run
            self._slots.put(slot)

    def close_slots(self) -> None:
        while True:
            try:
                stop_slot(self._slots.get_nowait())
            except queue.Empty:
                return

    def claim(self, job_id: str, worker: str) -> bool:
        t = now()
        return self.db.execute(
            "update jobs set status = ?, started_at = ?, updated_at = ?, progress = 0, attempts = attempts + 1,"
            " worker = ?, heartbeat_at = ? where id = ? and status = ?",
            PROCESSING, t, t, worker, t, job_id, QUEUED) == 1

    def execute(self, job_id: str, worker: str, stopping: Callable[[], bool] = lambda: False) -> str | None:
        """Run a queued job to its end. Returns the final status, or None if not claimed."""
        if not self.claim(job_id, worker):
            return None
        job = self.get(job_id, Caller(any_owner=True))
        tool = self.catalogue.get(job.tool)
        work = self.settings.jobs_dir / job.id
        shutil.rmtree(work, ignore_errors=True)
        out_dir = work / "out"
        out_dir.mkdir(parents=True)
        try:
            if tool is None:
                outcome = Outcome("failed", "unknown_tool", f"The tool {job.tool} is no longer installed.")
            else:
                outcome = self._run(job, tool, out_dir, work / "child.log", stopping)
            if outcome.status == "done":
                return self._finish_done(job, out_dir, work, outcome.notes)
            if outcome.status == "canceled" and stopping():
                self._requeue(job.id, count_attempt=False)
                return QUEUED
            if outcome.status == "failed":
                self._finish(job.id, FAILED, outcome.error_code, outcome.message)
                return FAILED
            return CANCELED
        except OSError as exc:
            code = "disk_full" if getattr(exc, "errno", None) == 28 else "io_error"
            self._finish(job.id, FAILED, code, f"Could not write the result: {exc.strerror or exc}.")
            return FAILED
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _run(self, job: Job, tool: Tool, out_dir: Path, log_path: Path, stopping: Callable[[], bool]) -> Outcome:
        try:
            slot: Path | None = self._slots.get_nowait()
        except queue.Empty:
            slot = None
        try:
            outcome = self._run_in(job, tool, out_dir, log_path, stopping, slot)
            if slot is not None and outcome.status != "done":
                stop_slot(slot)  # the job may have left its LibreOffice mid-conversion
            return outcome
        finally:
            if slot is not None:
                self._slots.put(slot)

    def _run_in(self, job: Job, tool: Tool, out_dir: Path, log_path: Path, stopping: Callable[[], bool],
                slot: Path | None) -> Outcome:
        inputs = []
        for file_id in job.input_file_ids:
            f = self.files.get(file_id, any_owner=True)
            inputs.append({"path": str(self.files.path_of(f.id)), "format": f.format, "name": f.original_name})
        spec = {
            "tool": tool.id, "inputs": inputs, "params": job.params, "outputFormat": job.output_format,
            "outDir": str(out_dir), "modelsDir": str(self.settings.models_dir),
            "settings": {**self.settings.tool_settings, **({"office_slot_dir": str(slot)} if slot else {})},
            "memoryLimitMb": self.settings.memory_limit_mb,
        }
        state = {"progress": 0, "written": 0.0}

        def on_progress(fraction: float) -> None:
            value = max(state["progress"], min(99, 1 + int(fraction * 98)))
            if value != state["progress"]:
                state["progress"] = value
                t = now()
                if t - state["written"] >= 0.2 or value == 99:
                    state["written"] = t
                    self.db.execute("update jobs set progress = ?, updated_at = ?, heartbeat_at = ?"
                                    " where id = ? and status = ?", value, t, t, job.id, PROCESSING)

        def should_cancel() -> bool:
            if stopping():
                return True
            row = self.db.one("select status from jobs where id = ?", job.id)
            return row is None or row["status"] != PROCESSING

        def heartbeat() -> None:
            t = now()
            self.db.execute("update jobs set heartbeat_at = ?, progress = max(progress, ?) where id = ? and status = ?",
                            t, state["progress"], job.id, PROCESSING)

        on_progress(0.0)
        outcome = run_supervised(spec, log_path=log_path,
                                 timeout=self.settings.tool_timeouts.get(tool.id, tool.timeout_seconds),
                                 on_progress=on_progress, should_cancel=should_cancel, on_tick=heartbeat,
                                 pool=self.children,
                                 on_start=lambda pid: self._record_child(job.id, pid))
        names = {str(i["path"]): str(i["name"]) for i in inputs}
        return dataclasses.replace(
            outcome, message=self._public(outcome.message, names) if outcome.message else outcome.message,
            notes=[self._public(note, names) for note in outcome.notes])

    def _public(self, text: str, names: dict[str, str]) -> str:
        """An engine's words without the data dir's layout: stored inputs by their names, other paths elided."""
        for path, name in names.items():
            text = text.replace(path, name)
        return text.replace(str(self.settings.jobs_dir.parent), "…")  # the data dir

    def _record_child(self, job_id: str, pid: int) -> None:
        self.db.execute("update jobs set child_pid = ? where id = ?", pid, job_id)

    def _finish_done(self, job: Job, out_dir: Path, work: Path, notes: list[str]) -> str:
        outputs = sorted(p for p in out_dir.iterdir() if p.is_file())
        if not outputs:
            self._finish(job.id, FAILED, "no_output", "The tool finished without producing a file.")
            return FAILED
        bundle_path: Path | None = None
        if len(outputs) > 1:
            bundle_path = work / "bundle.zip"
            with zipfile.ZipFile(bundle_path, "w", zipfile.ZIP_DEFLATED) as zf:
                for p in outputs:
                    zf.write(p, p.name)
        stored = [self.files.add(p, p.name, key_id=job.key_id, kind="result", job_id=job.id) for p in outputs]
        bundle = None
        if bundle_path is not None:
            stem = Path(self.files.get(job.input_file_ids[0], any_owner=True).original_name).stem or "results"
            bundle = self.files.add(bundle_path, f"{stem}-{job.tool}.zip", key_id=job.key_id, kind="bundle",
                                    job_id=job.id, fmt="zip")
        t = now()
        changed = self.db.execute(
            "update jobs set status = ?, progress = 100, result_file_ids = ?, bundle_file_id = ?, notes = ?,"
            " finished_at = ?, updated_at = ? where id = ? and status = ?",
            DONE, json.dumps([s.id for s in stored]), bundle.id if bundle else None, json.dumps(notes), t, t,
            job.id, PROCESSING)
        if not changed:  # canceled (or deleted) while the results were being stored
            for s in [*stored, *([bundle] if bundle else [])]:
                self.files.delete(s.id)
            return CANCELED
        return DONE

    def _finish(self, job_id: str, status: str, code: str | None, message: str | None) -> None:
        t = now()
        self.db.execute(
            "update jobs set status = ?, error_code = ?, error_message = ?, finished_at = ?, updated_at = ?"
            " where id = ? and status = ?", status, code, message, t, t, job_id, PROCESSING)

    def _requeue(self, job_id: str, *, count_attempt: bool) -> None:
        self.db.execute(
            "update jobs set status = ?, progress = 0, worker = null, updated_at = ?"
            + ("" if count_attempt else ", attempts = max(attempts - 1, 0)")
            + " where id = ? and status = ?", QUEUED, now(), job_id, PROCESSING)
        self.enqueue(job_id)

    def recover(self) -> dict[str, int]:
        """Re-enqueue QUEUED jobs; retry once or fail jobs whose worker died mid-run."""
        counts = {"requeued": 0, "retried": 0, "interrupted": 0}
        t = now()
        for row in self.db.all("select id, worker, heartbeat_at, attempts from jobs where status = ?", PROCESSING):
            stale = row["heartbeat_at"] is None or t - row["heartbeat_at"] > STALE_HEARTBEAT
            if not (worker_is_dead(row["worker"]) or stale):
                continue
            if row["attempts"] < MAX_ATTEMPTS:
                self._requeue(row["id"], count_attempt=True)
                counts["retried"] += 1
            else:
                self._finish(row["id"], FAILED, "interrupted",
                             "The worker running this job stopped unexpectedly, twice.")
                counts["interrupted"] += 1
            shutil.rmtree(self.settings.jobs_dir / row["id"], ignore_errors=True)
        return counts

    def requeue_all_queued(self) -> int:
        rows = self.db.all("select id from jobs where status = ? order by created_at", QUEUED)
        for row in rows:
            self.enqueue(row["id"])
        return len(rows)

    def clean_work_dirs(self) -> None:
        """Remove work dirs of jobs that are not running (leftovers of a crash)."""
        running = {r["id"] for r in self.db.all("select id from jobs where status = ?", PROCESSING)}
        for entry in os.scandir(self.settings.jobs_dir):
            if entry.name not in running and entry.name != "_children":
                shutil.rmtree(entry.path, ignore_errors=True)


def quota_headers(limit: int | None, used: int) -> dict[str, str]:
    if limit is None:
        return {}
    return {"X-Quota-Limit": str(limit), "X-Quota-Remaining": str(max(limit - used, 0))}


def validation_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "params"
        errors.setdefault(f"params.{loc}" if loc != "params" else loc, []).append(err["msg"])
    return errors
