"""The jobs controller: submit, cancel, retry and remove jobs, and watch every job live.

Jobs are watched through the service's job-event feed, the same one the API's waiting requests,
event streams and webhooks use: one read of the newest jobs at start, then every change as an event,
whoever made it (this app, an API client, a ``filekiln worker``). The feed calls us on its own
thread; a :class:`~desktop.threads.Relay` queues each event over to the GUI thread, where events are
merged per job and applied to the table in batches (see :class:`JobsController`).

Files the service refuses before converting (damaged, password protected, too large ...) have no
job; they get a row of their own all the same (:class:`Refusal`), with the reason, Retry and, for a
password-protected PDF, a password to unlock it with (:meth:`JobsController.unlock`).

Everything that touches the disk or the database runs in a background thread.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from desktop.models.jobs import JobRow, friendly_error
from desktop.store.deliveries import Delivery, DeliveryStore, copy_results, folder_inside, sizes_of
from desktop.store.naming import default_template
from desktop.threads import Background, Relay
from localapi.core.errors import Conflict, ServiceError
from localapi.core.jobs import Caller, Job
from localapi.core.jobs.events import PROGRESS, JobEvent
from localapi.core.service import Service
from localapi.core.states import JobStatus

log = logging.getLogger("filekiln.desktop")

PASSWORD_CODES = ("password_protected", "wrong_password")
UNLOCK_TOOL = "pdf-unlock"


def describe_service_error(exc: BaseException) -> tuple[str, str]:
    """(sentence for people, details) for an error raised by the service."""
    if isinstance(exc, ServiceError):
        details = [f"{exc.code}: {exc.detail}"]
        for name, messages in (exc.errors or {}).items():
            details.extend(f"{name}: {m}" for m in messages)
        text = exc.detail if exc.code in ("invalid_params", "unsupported_format") else None
        return text or friendly_error(exc.code, exc.detail), "\n".join(details)
    if isinstance(exc, OSError):
        return f"A file could not be read: {exc.strerror or exc}", repr(exc)
    return "Something went wrong.", repr(exc)


@dataclass(frozen=True)
class Refusal:
    """Files the service refused before converting: what was asked, to ask again (Retry, unlock)."""

    row: JobRow
    paths: tuple[Path, ...]
    params: dict[str, Any]
    output_format: str | None
    folder: Path | None  # None: next to the first input
    policy: str
    template: str
    batch: str


@dataclass(frozen=True)
class _Then:
    """What runs on the result of an unlock job once it is DONE: the job the password was given for."""

    tool: str
    params: dict[str, Any]
    output_format: str | None
    delivery: Delivery | None  # where its results go (job id filled in when it is made)


@dataclass(frozen=True)
class _Listing:
    """What one read of the job table found (the newest jobs), for :meth:`JobsController._on_listing`."""

    jobs: list[Job]  # newest first
    complete: bool  # every job there is fits in the page


class JobsController(QObject):
    """Feeds the jobs table (``snapshot``) and carries out what the Convert page and the jobs view ask.

    How the table learns of changes: each :class:`JobEvent` from ``service.events`` carries a snapshot
    of its job. Events are kept per job (the newest wins) and applied together: a change of state
    (queued, processing, done, failed, canceled) at the next turn of the event loop, progress at most
    every ``coalesce_ms``, so a burst of progress redraws the table once, not once per event.

    The job table itself is read only to start (the newest ``limit`` jobs) and, every ``sweep_ms``, to
    find jobs deleted by someone else (``DELETE /v1/jobs/{id}``): a deletion is not an event. The sweep
    never changes a job's state; that comes from events alone.
    """

    snapshot = Signal(list)  # list[JobRow], newest first, after each batch of changes
    submitted = Signal(str, list)  # batch id, job ids (and the ids of refused files' rows)
    failed = Signal(str, str)  # what went wrong in words, details
    replaced = Signal(str, str)  # a row's id, the id of the job made in its place (Retry, unlock)
    cleared = Signal()  # the finished rows were cleared from the list

    def __init__(self, service: Service, deliveries: DeliveryStore, tool_titles: dict[str, str],
                 coalesce_ms: int = 100, sweep_ms: int = 30_000, limit: int = 200,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.deliveries = deliveries
        self._given: dict[str, dict[str, Any]] = {}  # params as given to jobs of this run, passwords included
        self.tool_titles = dict(tool_titles)
        self.coalesce_ms = coalesce_ms
        self.limit = limit
        self._reader = Background(1, self)
        self._worker = Background(2, self)
        self._copier = Background(1, self)
        self._relay = Relay(self._on_event, self)
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self._flush)
        self.sweep_timer = QTimer(self)
        self.sweep_timer.setInterval(sweep_ms)
        self.sweep_timer.timeout.connect(self.sweep)
        self._started = False
        self._listed = False  # the first read is in: events may be applied
        self._reading = False
        self._jobs: dict[str, Job] = {}  # the table's jobs as last heard of
        self._read_stamps: dict[str, float] = {}  # job id -> updated_at, for jobs known from a read only
        self._pending: dict[str, JobEvent] = {}  # the newest event per job, not yet applied
        self._touched: set[str] = set()  # jobs an event told of since the current read began
        self._gone: set[str] = set()  # deleted jobs: a late event must not bring them back
        self._copying: set[str] = set()
        # names for people, filled off the GUI thread (the feed's thread, the reader) and read on it
        self._labels: dict[str, str] = {}  # job id -> its files' names
        self._key_names: dict[str, str] = {}
        self._formats: dict[str, tuple[str, ...]] = {}  # job id -> its inputs' formats
        self._step_counts: dict[str, int] = {}  # workflow id -> how many steps it has
        self._refusals: dict[str, Refusal] = {}  # refused files' rows, by row id
        self._then: dict[str, _Then] = {}  # unlock job id -> the job to make from its result
        self._feeds: dict[str, str] = {}  # unlock job id -> the job made from its result ("" while it is made)
        self.rows: list[JobRow] = []

    # ---- watching ----

    def start(self) -> None:
        """Listen to the job-event feed (starting it: the API may be off), then read the newest jobs once."""
        if self._started:
            return
        self._started = True
        self.service.events.on_event(self._receive)
        self.service.events.start()
        self.sweep()
        self.sweep_timer.start()

    def stop(self) -> None:
        self._relay.close()
        self.sweep_timer.stop()
        self._flush_timer.stop()
        for pool in (self._worker, self._copier, self._reader):
            pool.wait(30_000)

    def _receive(self, event: JobEvent) -> None:
        """On the feed's thread: name a job's files and key the first time it is heard of (a read or
        two of the database, here rather than on the GUI thread), then hand the event over."""
        if not self._relay.open or event.workflow is not None:  # a workflow's end: its jobs tell their own
            return
        self._name(event.job)
        self._relay.send(event)

    def _on_event(self, event: JobEvent) -> None:
        """On the GUI thread, once per event, in order: keep it until the next flush."""
        self._pending[event.job.id] = event
        if event.type != PROGRESS:
            if not (self._flush_timer.isActive() and self._flush_timer.interval() == 0):
                self._flush_timer.start(0)
        elif not self._flush_timer.isActive():
            self._flush_timer.start(self.coalesce_ms)

    def _flush(self) -> None:
        if self._listed and self._apply_pending():  # before the first read is in, events wait for it
            self._publish()

    def _apply_pending(self) -> bool:
        events, self._pending = self._pending, {}
        for job_id, event in events.items():
            if job_id in self._gone:
                continue
            stamp = self._read_stamps.get(job_id)
            if stamp is not None:
                if event.job.updated_at < stamp:
                    continue  # an event from before the read, delivered after it
                del self._read_stamps[job_id]
            self._jobs[job_id] = event.job
            self._touched.add(job_id)
            if job_id in self._then and event.job.status.finished:
                self._go_on(event.job)
        return bool(events)

    def _publish(self) -> None:
        """Emit the table as it now stands, and copy out the results of this app's jobs that are DONE."""
        if not self._listed:
            return
        newest = sorted(self._jobs.values(), key=lambda j: (j.created_at, j.id), reverse=True)
        for job in newest[self.limit:]:
            del self._jobs[job.id]
            self._read_stamps.pop(job.id, None)
        rows = [self._row(job) for job in newest[:self.limit]]
        if self._refusals:
            rows = sorted([*rows, *(r.row for r in self._refusals.values())], key=lambda r: (r.created_at, r.id),
                          reverse=True)
        self.rows = rows
        self.snapshot.emit(rows)
        for row in rows:
            if row.saving and row.id not in self._copying:
                self._deliver(row.id)

    # ---- reading the job table: at start, and to notice deletions ----

    def sweep(self) -> None:
        """Read the newest jobs (off the GUI thread) to add those not heard of and drop deleted ones."""
        if self._reading:
            return
        self._reading = True
        self._touched = set()
        self._reader.run(self._read, self._on_listing, self._on_read_error)

    def _read(self) -> _Listing:
        page = self.service.jobs.page(Caller(), everyone=True, limit=self.limit)
        for job in page.items:
            self._name(job)
        if page.next_cursor is None:
            self._forget_deleted_jobs({j.id for j in page.items})
        return _Listing(page.items, page.next_cursor is None)

    def _on_read_error(self, exc: BaseException) -> None:
        self._reading = False
        log.warning("reading the jobs failed: %s", exc)
        if not self._listed:
            self._listed = True  # events still come; the next sweep reads again
            self._flush()

    def _on_listing(self, listing: _Listing) -> None:
        self._reading = False
        listed = {job.id: job for job in listing.jobs}
        for job_id, job in listed.items():
            if job_id not in self._jobs and job_id not in self._gone:
                self._jobs[job_id] = job
                self._read_stamps[job_id] = job.updated_at
        oldest = listing.jobs[-1].created_at if listing.jobs and not listing.complete else float("-inf")
        # A job missing from the read is deleted, unless it is older than the page or was heard of
        # since the read began: its change may have been committed after the read's snapshot.
        deleted = [job.id for job in self._jobs.values()
                   if job.id not in listed and job.id not in self._touched and job.id not in self._pending
                   and job.created_at > oldest]
        self._drop(deleted)
        self._listed = True
        self._apply_pending()
        self._publish()

    def _drop(self, job_ids: Sequence[str]) -> None:
        for job_id in job_ids:
            self._gone.add(job_id)
            self._jobs.pop(job_id, None)
            self._read_stamps.pop(job_id, None)
            self._pending.pop(job_id, None)

    def _forget_deleted_jobs(self, listed: set[str]) -> None:
        """Drop deliveries of jobs that no longer exist (deleted through the API). A job missing from
        the page may just be newer than it, so each one is looked up before it is forgotten."""
        gone = []
        for job_id in self.deliveries.job_ids():
            if job_id in listed:
                continue
            try:
                self.service.jobs.get(job_id, Caller(any_owner=True))
            except ServiceError:
                gone.append(job_id)
        if gone:
            self.deliveries.remove(gone)

    # ---- rows ----

    def _name(self, job: Job) -> None:
        """Off the GUI thread: remember the names of ``job``'s files and of its key."""
        if job.id not in self._labels:
            self._labels[job.id] = self._files_label(job.input_file_ids)
            self._formats[job.id] = self._input_formats(job.input_file_ids)
        if job.key_id and job.key_id not in self._key_names:
            self._key_names.update({k.id: k.name for k in self.service.keys.list()})
        if job.workflow_id and job.workflow_id not in self._step_counts:
            try:
                workflow = self.service.workflows.get(job.workflow_id, Caller(any_owner=True))
            except ServiceError:
                return
            self._step_counts[job.workflow_id] = len(workflow.steps)

    def _row(self, job: Job) -> JobRow:
        delivery = self.deliveries.get(job.id)
        from_app = job.key_id is None
        return JobRow(
            id=job.id, tool=job.tool, tool_title=self.tool_titles.get(job.tool, job.tool),
            files_label=self._labels.get(job.id, ""),
            source="This app" if from_app else f"API: {self._key_names.get(job.key_id or '', 'a key')}",
            status=JobStatus(job.status), progress=job.progress, created_at=job.created_at, started_at=job.started_at,
            finished_at=job.finished_at, error_code=job.error_code, error_message=job.error_message,
            notes=tuple(job.notes), from_app=from_app, params=dict(job.params), output_format=job.output_format,
            input_file_ids=tuple(job.input_file_ids),
            outputs=tuple(delivery.delivered or ()) if delivery else (),
            skipped=delivery.skipped if delivery else (),
            saving=bool(delivery and delivery.pending and job.status == JobStatus.DONE),
            delivery_error=delivery.error if delivery else None,
            output_bytes=delivery.output_bytes if delivery else None,
            input_bytes=delivery.input_bytes if delivery else None,
            can_unlock=from_app and job.status == JobStatus.FAILED and job.workflow_id is None
            and self.can_unlock(job.tool, job.error_code, self._formats.get(job.id, ())),
            workflow_id=job.workflow_id, step=job.step or 0, steps=self._step_counts.get(job.workflow_id or "", 0))

    def can_unlock(self, tool_id: str, code: str | None, formats: Sequence[str]) -> bool:
        """Whether a password would let a job of ``tool_id`` that failed with ``code`` go on: the tool
        takes a password itself, or its input is a PDF that pdf-unlock can open first."""
        if code not in PASSWORD_CODES:
            return False
        if self._takes_password(tool_id):
            return True
        pdfs = bool(formats) and all(f == "pdf" for f in formats)
        return pdfs and tool_id != UNLOCK_TOOL and self.service.catalogue.get(UNLOCK_TOOL) is not None

    def _takes_password(self, tool_id: str) -> bool:
        tool = self.service.catalogue.get(tool_id)
        return tool is not None and "password" in tool.params.model_fields

    def _input_formats(self, file_ids: Sequence[str]) -> tuple[str, ...]:
        formats = []
        for file_id in file_ids:
            try:
                formats.append(self.service.files.get(file_id, any_owner=True, include_deleted=True).format or "")
            except ServiceError:
                formats.append("")
        return tuple(formats)

    def _files_label(self, file_ids: Sequence[str]) -> str:
        names = []
        for file_id in file_ids:
            try:
                names.append(self.service.files.get(file_id, any_owner=True, include_deleted=True).original_name)
            except ServiceError:
                names.append("(removed file)")
        if not names:
            return ""
        return names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more"

    # ---- results ----

    def _deliver(self, job_id: str) -> None:
        delivery = self.deliveries.get(job_id)
        if delivery is None:
            return
        self._copying.add(job_id)

        def copy() -> None:
            inputs = [Path(p) for p in delivery.inputs]
            try:
                written, skipped = copy_results(self.service.result_paths(job_id), Path(delivery.folder),
                                                delivery.policy, protected=inputs, template=delivery.template,
                                                tool=delivery.tool)
            except (OSError, ServiceError) as exc:
                self.deliveries.finish(job_id, [], [], error=str(getattr(exc, "detail", None) or exc))
            else:
                self.deliveries.finish(job_id, written, skipped, output_bytes=sizes_of(written) if written else None,
                                       input_bytes=sizes_of(inputs) if inputs else None)

        def done(_: object) -> None:
            self._copying.discard(job_id)
            self._publish()

        self._copier.run(copy, done, done)

    # ---- actions ----

    def submit(self, groups: Sequence[Sequence[Path]], tool_id: str, params: dict[str, Any],
               output_format: str | None, folder: Path | None, policy: str, name_template: str | None = None,
               subfolders: Sequence[Path] | None = None) -> str:
        """Queue one job per group (a group is one file, or all files for a tool that merges them).

        ``folder`` ``None`` puts each result next to its group's first input; ``subfolders`` (one per
        group) put each group's results in that folder inside ``folder``, to keep a dropped folder's
        tree. ``name_template`` names the results (``None``: the tool's default). A group the service
        refuses gets a row saying why. Returns the batch id.
        """
        batch = uuid.uuid4().hex
        template = name_template or default_template(tool_id)
        lists = [list(g) for g in groups]
        targets = [folder_inside(folder, sub) for sub in subfolders] if subfolders else [folder] * len(lists)

        def work() -> tuple[list[str], list[Refusal]]:
            job_ids: list[str] = []
            refused: list[Refusal] = []
            for group, target in zip(lists, targets, strict=True):
                try:
                    job = self.service.submit_local(group, tool_id, params, output_format)
                except (ServiceError, OSError) as exc:
                    refused.append(self._refusal(group, tool_id, params, output_format, target, policy, template,
                                                 batch, exc))
                    continue
                self._given[job.id] = params  # passwords are not kept with the job: a retry needs them
                self.deliveries.add(self._delivery(job.id, group, target, policy, batch, tool_id, template))
                job_ids.append(job.id)
            return job_ids, refused

        def done(result: tuple[list[str], list[Refusal]]) -> None:
            job_ids, refused = result
            for refusal in refused:
                self._refusals[refusal.row.id] = refusal
            self.submitted.emit(batch, [*job_ids, *(r.row.id for r in refused)])
            self._publish()  # a job may have ended before its delivery was recorded

        self._worker.run(work, done, self._on_action_error)
        return batch

    @staticmethod
    def _delivery(job_id: str, group: Sequence[Path], folder: Path | None, policy: str, batch: str, tool_id: str,
                  template: str) -> Delivery:
        target = folder if folder is not None else group[0].parent
        return Delivery(job_id, str(target), policy, batch, tuple(str(p) for p in group), tool=tool_id,
                        template=template)

    def _refusal(self, group: Sequence[Path], tool_id: str, params: dict[str, Any], output_format: str | None,
                 folder: Path | None, policy: str, template: str, batch: str, exc: BaseException) -> Refusal:
        """Off the GUI thread: a row for files the service would not take, saying why."""
        text, details = describe_service_error(exc)
        code = exc.code if isinstance(exc, ServiceError) else "io_error"
        formats = []
        for path in group:
            try:
                formats.append(self.service.sniff(path) or "")
            except OSError:
                formats.append("")
        names = [p.name for p in group]
        row = JobRow(
            id=f"refused_{uuid.uuid4().hex}", tool=tool_id, tool_title=self.tool_titles.get(tool_id, tool_id),
            files_label=names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more",
            source="This app", status=JobStatus.FAILED, progress=0, created_at=time.time(), error_code=code,
            error_message=getattr(exc, "detail", None) or str(exc), refusal=text, details=details,
            can_unlock=self.can_unlock(tool_id, code, formats))
        return Refusal(row, tuple(group), dict(params), output_format, folder, policy, template, batch)

    def _on_action_error(self, exc: BaseException) -> None:
        text, details = describe_service_error(exc)
        self.failed.emit(text, details)

    def cancel(self, job_ids: Sequence[str]) -> None:
        ids = [j for j in job_ids if j not in self._refusals]

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.cancel(job_id, Caller(any_owner=True))
                except Conflict:
                    pass  # finished meanwhile

        self._worker.run(work, None, self._on_action_error)  # the feed tells how it went

    def cancel_all(self) -> list[str]:
        """Stop every job that is waiting or running (this app's and API clients'); returns their ids."""
        ids = [r.id for r in self.rows if r.active]
        if ids:
            self.cancel(ids)
        return ids

    def remove(self, job_ids: Sequence[str]) -> None:
        """Delete jobs (canceling running ones) and their stored results; copies on disk stay. An unlock
        job stays while the job made from its result has not finished: that job reads the result."""
        running = {"", *(r.id for r in self.rows if r.active)}
        job_ids = [j for j in job_ids if j not in self._feeds or self._feeds[j] not in running]
        ids = [j for j in job_ids if j not in self._refusals]
        dropped = [j for j in job_ids if self._refusals.pop(j, None) is not None]
        for job_id in job_ids:
            self._then.pop(job_id, None)  # a removed unlock job leads nowhere
        if dropped and not ids:
            self._publish()
            return

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.delete(job_id, Caller(any_owner=True))
                except ServiceError:
                    pass
            self.deliveries.remove(ids)

        def done(_: object) -> None:
            self._drop(ids)
            self._publish()

        self._worker.run(work, done, self._on_action_error)

    def clear_finished(self) -> None:
        """Take every finished row off the list (done, failed, canceled, refused); saved files stay."""
        ids = [r.id for r in self.rows if not r.active]
        if ids:
            self.remove(ids)
        self.cleared.emit()

    def retry(self, row: JobRow) -> str:
        """Run a failed or canceled job of this app again, with the same inputs and choices.

        The new job's id comes with :attr:`replaced`; a refused file's row gives way to it."""
        if row.id in self._refusals:
            return self._resubmit(self._refusals[row.id], None)
        return self._recreate(row, None)

    def unlock(self, row: JobRow, password: str) -> str:
        """Go on with a job that failed for want of a password: the same tool with ``password`` when it
        takes one, else pdf-unlock first and the job's own tool on the unlocked PDF. The row gives way
        to the new job. Returns the batch id."""
        if row.id in self._refusals:
            return self._resubmit(self._refusals[row.id], password)
        return self._recreate(row, password)

    def _recreate(self, row: JobRow, password: str | None) -> str:
        batch = uuid.uuid4().hex
        previous = self.deliveries.get(row.id)
        then = self._then.pop(row.id, None)
        params = dict(self._given.get(row.id, row.params))
        chain = password is not None and not self._takes_password(row.tool)
        if password is not None and not chain:
            params["password"] = password

        def work() -> str:
            if chain:
                job = self.service.jobs.create(Caller(), UNLOCK_TOOL, list(row.input_file_ids),
                                               {"password": password}, None)
                self._given[job.id] = {"password": password}
                return job.id
            job = self.service.jobs.create(Caller(), row.tool, list(row.input_file_ids), params, row.output_format)
            self._given[job.id] = params
            if previous is not None:
                self.deliveries.add(replace(previous, job_id=job.id, batch=batch, delivered=None, skipped=(),
                                            error=None, output_bytes=None, input_bytes=None))
            return job.id

        def done(job_id: str) -> None:
            if chain:
                self._follow(job_id, _Then(row.tool, params, row.output_format, previous))
            elif then is not None:  # an unlock job again, with another password: the job after it still waits
                self._follow(job_id, then)
            self._after_replacing(row.id, job_id, batch, drop=password is not None)

        self._worker.run(work, done, self._on_action_error)
        return batch

    def _resubmit(self, refusal: Refusal, password: str | None) -> str:
        """Ask the service again for a refused file's row (after a change on disk, or with a password)."""
        batch = uuid.uuid4().hex
        row = refusal.row
        params = dict(refusal.params)
        chain = password is not None and not self._takes_password(row.tool)
        if password is not None and not chain:
            params["password"] = password
        delivery = self._delivery("", refusal.paths, refusal.folder, refusal.policy, batch, row.tool,
                                  refusal.template)

        def work() -> str | Refusal:
            group = list(refusal.paths)
            tool, given = (UNLOCK_TOOL, {"password": password}) if chain else (row.tool, params)
            try:
                job = self.service.submit_local(group, tool, given, None if chain else refusal.output_format)
            except (ServiceError, OSError) as exc:
                return self._refusal(group, tool, given, None if chain else refusal.output_format, refusal.folder,
                                     refusal.policy, refusal.template, batch, exc)
            self._given[job.id] = given
            if not chain:
                self.deliveries.add(replace(delivery, job_id=job.id))
            return job.id

        def done(result: str | Refusal) -> None:
            self._refusals.pop(row.id, None)
            if isinstance(result, Refusal):
                if chain:  # pdf-unlock refused the file: say so, and keep what was asked for Retry
                    result = replace(result, row=replace(result.row, can_unlock=False))
                self._refusals[result.row.id] = result
                self._after_replacing(row.id, result.row.id, batch, drop=False)
                return
            if chain:
                self._follow(result, _Then(row.tool, params, refusal.output_format, delivery))
            self._after_replacing(row.id, result, batch, drop=False)

        self._worker.run(work, done, self._on_action_error)
        return batch

    def _after_replacing(self, old_id: str, new_id: str, batch: str, drop: bool) -> None:
        self.submitted.emit(batch, [new_id])
        self.replaced.emit(old_id, new_id)
        if drop:  # the password failure is answered: its row goes
            self.remove([old_id])
        else:
            self._publish()

    def _follow(self, unlock_id: str, then: _Then) -> None:
        """Once the unlock job ``unlock_id`` is DONE, make ``then``'s job from its result."""
        self._then[unlock_id] = then
        job = self._jobs.get(unlock_id)
        if job is not None and job.status.finished:  # it ended before we got here
            self._go_on(job)

    def _go_on(self, unlock: Job) -> None:
        if unlock.status != JobStatus.DONE:
            return  # failed or canceled: its row says why (and asks for the password again when wrong)
        then = self._then.pop(unlock.id, None)
        if then is None:
            return
        self._feeds[unlock.id] = ""  # being made: the unlocked PDF must stay until then
        batch = uuid.uuid4().hex

        def work() -> str:
            job = self.service.jobs.create(Caller(), then.tool, list(unlock.result_file_ids), then.params,
                                           then.output_format)
            self._given[job.id] = then.params
            if then.delivery is not None:
                self.deliveries.add(replace(then.delivery, job_id=job.id, batch=batch))
            return job.id

        def done(job_id: str) -> None:
            self._feeds[unlock.id] = job_id
            self.submitted.emit(batch, [job_id])
            self.replaced.emit(unlock.id, job_id)
            self._publish()

        def failed(exc: BaseException) -> None:
            self._feeds.pop(unlock.id, None)
            self._on_action_error(exc)

        self._worker.run(work, done, failed)
