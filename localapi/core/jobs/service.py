"""The API side of a job: validate and create it, read it, cancel and delete it.

Every face (HTTP, desktop, CLI) goes through here; nothing here runs a conversion. The worker side
(claim, run, record, recover) is :mod:`localapi.core.jobs.worker`. The job table is the source of truth.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from converters.base import SECRET_MASK, InputFile, Params, Tool
from converters.catalogue import Catalogue
from localapi.core.db import Connection, Database, new_id, now
from localapi.core.errors import (
    Conflict,
    Gone,
    InvalidParams,
    JobNotFinished,
    JobNotFound,
    QuotaExceeded,
    ServiceError,
    Unavailable,
)
from localapi.core.files import FileStore, StoredFile
from localapi.core.jobs.events import CREATED, DELETED, TYPE_OF_STATUS, EventFeed, append
from localapi.core.jobs.records import Caller, Job, JobPage, Result, quota_headers
from localapi.core.jobs.sealed import Sealer
from localapi.core.jobs.validation import check_input_file, check_request, precheck
from localapi.core.keys import today
from localapi.core.states import JobStatus
from localapi.core.switches import Switches


class JobService:
    def __init__(self, db: Database, files: FileStore, catalogue: Catalogue, switches: Switches,
                 enqueue: Callable[[str], None], data_dir: Path, events: EventFeed, sealer: Sealer) -> None:
        self.db = db
        self.sealer = sealer
        self.events = events
        self.files = files
        self.catalogue = catalogue
        self.switches = switches
        self.enqueue = enqueue
        self.data_dir = data_dir
        self.ended: Callable[[Job], None] = lambda job: None  # told of every job this side ends (cancel)

    # ---- creation ----

    def validate(self, caller: Caller, tool_id: str, input_file_ids: Sequence[str],
                 params: dict[str, Any] | None, output_format: str | None,
                 *, continuing: bool = False) -> tuple[Tool, Any, str, list[StoredFile]]:
        """Everything that can be said about a job before it is queued; raises ServiceError.
        ``continuing``: the next step of a workflow already accepted, which maintenance does not hold up."""
        maintenance, disabled = self.switches.read()
        if maintenance and not continuing:
            raise Unavailable("FileKiln is in maintenance mode; try again later.", code="maintenance",
                              headers={"Retry-After": "60"})
        tool, model, fmt = check_request(self.catalogue, self.switches, tool_id, params, output_format,
                                         len(input_file_ids), disabled)
        revealed = model.revealed()
        masked = sorted(name for name in model.secret_names() if revealed[name] == SECRET_MASK)
        if masked:  # params copied from a job as shown: its passwords are not kept, and "***" is not one
            raise InvalidParams("Give the password again: a job's passwords are not kept.",
                                errors={f"params.{name}": ["give the value again"] for name in masked})
        stored: list[StoredFile] = []
        for index, file_id in enumerate(input_file_ids):
            try:
                f = self.files.get(file_id, key_id=caller.key_id)
            except ServiceError:
                raise InvalidParams(f"Unknown input file {file_id!r}.", code="unknown_file", errors={
                    f"inputFileIds.{index}": [f"no file {file_id!r}"]}) from None
            check_input_file(tool, f.original_name, f.format, f.size_bytes)
            stored.append(f)
        try:
            inputs = [InputFile(self.files.path_of(f.id), f.format or "", f.original_name) for f in stored]
        except FileNotFoundError:  # its record is there, its bytes were purged a moment ago
            raise Gone("An input file is no longer kept; upload it again.", code="file_expired") from None
        precheck(tool, model, inputs, self.switches.tool_env, self.data_dir)
        return tool, model, fmt, stored

    def create(self, caller: Caller, tool_id: str, input_file_ids: Sequence[str],
               params: dict[str, Any] | None = None, output_format: str | None = None,
               webhook_url: str | None = None, tag: str | None = None) -> Job:
        """Validate and queue a job. ``webhook_url`` (checked by the caller against the allowed hosts)
        receives this job's events besides the key's webhooks."""
        tool, model, fmt, _ = self.validate(caller, tool_id, input_file_ids, params, output_format)
        with self.events.changing() as conn:
            self.charge(conn, caller)
            created = self.insert(conn, caller.key_id, tool, model, fmt, input_file_ids,
                                  webhook_url=webhook_url, tag=tag)
        self.enqueue(created.id)
        return created  # as created (QUEUED): an idle worker may take it before a read here could

    def charge(self, conn: Connection, caller: Caller, *, refuse: bool = True) -> None:
        """Count one job against the caller's daily quota; past it, refuse (402) unless ``refuse`` is off
        (a later step of a workflow the quota let in)."""
        key = caller.key
        if key is None:
            return
        if refuse and key.daily_job_quota is not None:  # a key without a quota is only counted
            used_row = conn.execute("select jobs from usage where key_id = ? and day = ?",
                                    (key.id, today())).fetchone()
            used = used_row["jobs"] if used_row else 0
            if used >= key.daily_job_quota:
                raise QuotaExceeded(
                    f"This key's daily quota of {key.daily_job_quota} jobs is used up; it resets at 00:00 UTC.",
                    headers=quota_headers(key.daily_job_quota, used))
        conn.execute("insert into usage (key_id, day, jobs) values (?, ?, 1) "
                     "on conflict (key_id, day) do update set jobs = usage.jobs + 1", (key.id, today()))

    def insert(self, conn: Connection, key_id: str | None, tool: Tool, model: Params, fmt: str,
               input_file_ids: Sequence[str], *, webhook_url: str | None = None, tag: str | None = None,
               workflow_id: str | None = None, step: int | None = None) -> Job:
        """Record a validated job as QUEUED, inside the caller's open change; the caller enqueues it
        once the change has committed."""
        job_id = new_id("job")
        t = now()
        revealed = model.revealed()
        conn.execute(
            "insert into jobs (id, key_id, tool, status, progress, output_format, params, input_file_ids,"
            " created_at, updated_at, webhook_url, secret_params, tag, workflow_id, step)"
            " values (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, key_id, tool.id, JobStatus.QUEUED, fmt, json.dumps(model.public()),
             json.dumps(list(input_file_ids)), t, t, webhook_url,
             self.sealer.seal({name: revealed[name] for name in model.secret_names()}), tag, workflow_id, step),
        )
        job = append(conn, job_id, CREATED, TYPE_OF_STATUS[JobStatus.QUEUED])
        assert job is not None  # inserted just now, in this transaction
        return job

    def retry(self, job_id: str, caller: Caller, params: dict[str, Any] | None = None) -> Job:
        """Run a FAILED or CANCELED job again as a new job: same tool, inputs, output format, tag and
        webhook; ``params`` (such as a password, which a job does not keep) are laid over its own."""
        job = self.get(job_id, caller)
        if job.status not in (JobStatus.FAILED, JobStatus.CANCELED):
            raise Conflict(f"Job {job.id} is {job.status}; only a FAILED or CANCELED job can be retried.",
                           code="job_not_retryable")
        for file_id in job.input_file_ids:
            try:
                self.files.get(file_id, any_owner=True)
            except ServiceError:
                raise Gone(f"The inputs of job {job.id} are no longer kept; upload them again.",
                           code="inputs_gone") from None
        return self.create(caller, job.tool, job.input_file_ids, {**job.params, **(params or {})},
                           job.output_format, webhook_url=job.webhook_url, tag=job.tag)

    # ---- reading ----

    def get(self, job_id: str, caller: Caller) -> Job:
        row = self.db.one("select * from jobs where id = ?", job_id)
        if row is None or not caller.owns(row["key_id"]):
            raise JobNotFound(f"No job {job_id!r}.")
        return Job.from_row(row)

    def page(self, caller: Caller, *, status: str | None = None, tool: str | None = None,
             tag: str | None = None, limit: int = 50, cursor: str | None = None,
             everyone: bool = False) -> JobPage:
        """Newest first. ``cursor`` is the opaque value of a previous page's ``next_cursor``."""
        where: list[str] = []
        args: list[Any] = []
        if not everyone:
            where.append("key_id is not distinct from ?")
            args.append(caller.key_id)
        if status:
            where.append("status = ?")
            args.append(status)
        if tool:
            where.append("tool = ?")
            args.append(tool)
        if tag:
            where.append("tag = ?")
            args.append(tag)
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
        return self.result_of(self.get(job_id, caller))

    def result_of(self, job: Job) -> Result:
        """The result of ``job`` as the caller holds it (read just now, or as its last event gave it)."""
        if job.status != JobStatus.DONE:
            raise _no_result(job)
        files = [self._result_file(fid) for fid in job.result_file_ids]
        bundle = self._result_file(job.bundle_file_id) if job.bundle_file_id else None
        return Result(job, files, bundle)

    def _result_file(self, file_id: str) -> StoredFile:
        """A result file; 410 once it is gone, purged or deleted, or past its retention and waiting for the
        purge (a link to it would be dead on arrival): the job itself still exists."""
        f = self.files.get(file_id, any_owner=True, include_deleted=True)
        if f.deleted_at is None and f.expires_at > now():
            return f
        if f.deleted_at is None or f.expires_at <= f.deleted_at:
            raise Gone("The job's results were purged when their retention ended.", code="result_expired")
        raise Gone("The job's results were deleted.", code="result_deleted")

    # ---- changes ----

    def cancel(self, job_id: str, caller: Caller) -> Job:
        """Cancel a QUEUED or PROCESSING job. A running job's supervisor sees the status within 0.2 s,
        kills the child and removes its output."""
        job = self.get(job_id, caller)
        changed = self.events.change(
            job.id, TYPE_OF_STATUS[JobStatus.CANCELED],
            "update jobs set status = ?, finished_at = ?, updated_at = ?, error_code = 'canceled',"
            " error_message = 'Canceled on request.', secret_params = null where id = ? and status in (?, ?)",
            JobStatus.CANCELED, now(), now(), job.id, JobStatus.QUEUED, JobStatus.PROCESSING)
        if not changed:
            raise Conflict(f"Job {job_id} is already {self.get(job_id, caller).status}.", code="job_finished")
        canceled = self.get(job_id, caller)
        self.ended(canceled)
        return canceled

    def delete(self, job_id: str, caller: Caller) -> None:
        job = self.get(job_id, caller)
        if job.workflow_id is not None and self._workflow_running(job.workflow_id):
            raise Conflict(f"Job {job.id} is a step of workflow {job.workflow_id}, which is still running; "
                           "cancel the workflow first.", code="workflow_running")
        if not job.status.finished:
            try:
                self.cancel(job_id, caller)
            except Conflict:
                pass
        job = self.get(job_id, caller)
        with self.events.changing() as conn:
            append(conn, job.id, DELETED)  # its events stay until retention purges them: none is lost
            conn.execute("delete from jobs where id = ?", (job.id,))
        for file_id in [*job.result_file_ids, *([job.bundle_file_id] if job.bundle_file_id else [])]:
            self.files.delete(file_id)

    def _workflow_running(self, workflow_id: str) -> bool:
        row = self.db.one("select status from workflows where id = ?", workflow_id)
        return row is not None and JobStatus(row["status"]).active

    def inputs_in_use(self, file_id: str) -> bool:
        row = self.db.one(
            "select 1 from jobs where status in (?, ?) and input_file_ids like ? limit 1",
            JobStatus.QUEUED, JobStatus.PROCESSING, f'%"{file_id}"%')
        return row is not None


def _no_result(job: Job) -> ServiceError:
    """Why a job has no result: not yet (ask again in a second), or never (it failed or was canceled)."""
    if job.status == JobStatus.FAILED:
        return Conflict(f"Job {job.id} failed ({job.error_code}); it has no result.", code="job_failed")
    if job.status == JobStatus.CANCELED:
        return Conflict(f"Job {job.id} was canceled; it has no result.", code="job_canceled")
    return JobNotFinished(f"Job {job.id} is {job.status}, not DONE.", headers={"Retry-After": "1"})
