"""The jobs controller: submit, cancel, retry and remove jobs, and watch every job live.

Jobs are watched through the service's job-event feed, the same one the API's waiting requests,
event streams and webhooks use: one read of the newest jobs at start, then every change as an event,
whoever made it (this app, an API client, a ``filekiln worker``). The feed calls us on its own
thread; a :class:`~desktop.threads.Relay` queues each event over to the GUI thread, where events are
merged per job and applied to the table in batches (see :class:`JobsController`).

Everything that touches the disk or the database runs in a background thread.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from desktop.models.jobs import JobRow, friendly_error
from desktop.store.deliveries import Delivery, DeliveryStore, copy_results
from desktop.threads import Background, Relay
from localapi.core.errors import Conflict, ServiceError
from localapi.core.jobs import Caller, Job
from localapi.core.jobs.events import PROGRESS, JobEvent
from localapi.core.service import Service
from localapi.core.states import JobStatus

log = logging.getLogger("filekiln.desktop")


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
    submitted = Signal(str, list)  # batch id, job ids
    failed = Signal(str, str)  # what went wrong in words, details

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
        if not self._relay.open:
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
        if job.key_id and job.key_id not in self._key_names:
            self._key_names.update({k.id: k.name for k in self.service.keys.list()})

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
            delivery_error=delivery.error if delivery else None)

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
            try:
                written, skipped = copy_results(self.service.result_paths(job_id), Path(delivery.folder),
                                                delivery.policy, protected=[Path(p) for p in delivery.inputs])
            except (OSError, ServiceError) as exc:
                self.deliveries.finish(job_id, [], [], error=str(getattr(exc, "detail", None) or exc))
            else:
                self.deliveries.finish(job_id, written, skipped)

        def done(_: object) -> None:
            self._copying.discard(job_id)
            self._publish()

        self._copier.run(copy, done, done)

    # ---- actions ----

    def submit(self, groups: Sequence[Sequence[Path]], tool_id: str, params: dict[str, Any],
               output_format: str | None, folder: Path | None, policy: str) -> str:
        """Queue one job per group (a group is one file, or all files for a tool that merges them).

        ``folder`` ``None`` puts each result next to its group's first input. Returns the batch id.
        """
        batch = uuid.uuid4().hex
        lists = [list(g) for g in groups]

        def work() -> tuple[list[str], list[tuple[list[Path], BaseException]]]:
            job_ids: list[str] = []
            errors: list[tuple[list[Path], BaseException]] = []
            for group in lists:
                try:
                    job = self.service.submit_local(group, tool_id, params, output_format)
                except (ServiceError, OSError) as exc:
                    errors.append((group, exc))
                    continue
                target = folder if folder is not None else group[0].parent
                self._given[job.id] = params  # passwords are not kept with the job: a retry needs them
                self.deliveries.add(Delivery(job.id, str(target), policy, batch, tuple(str(p) for p in group)))
                job_ids.append(job.id)
            return job_ids, errors

        def done(result: tuple[list[str], list[tuple[list[Path], BaseException]]]) -> None:
            job_ids, errors = result
            self.submitted.emit(batch, job_ids)
            if errors:
                text, details = describe_service_error(errors[0][1])
                names = ", ".join(p.name for group, _ in errors for p in group)
                more = f" ({len(errors)} files could not be queued: {names})" if len(lists) > 1 else ""
                self.failed.emit(text + more, details)
            self._publish()  # a job may have ended before its delivery was recorded

        self._worker.run(work, done, self._on_action_error)
        return batch

    def _on_action_error(self, exc: BaseException) -> None:
        text, details = describe_service_error(exc)
        self.failed.emit(text, details)

    def cancel(self, job_ids: Sequence[str]) -> None:
        ids = list(job_ids)

        def work() -> None:
            for job_id in ids:
                try:
                    self.service.jobs.cancel(job_id, Caller(any_owner=True))
                except Conflict:
                    pass  # finished meanwhile

        self._worker.run(work, None, self._on_action_error)  # the feed tells how it went

    def remove(self, job_ids: Sequence[str]) -> None:
        """Delete jobs (canceling running ones) and their stored results; copies on disk stay."""
        ids = list(job_ids)

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

    def retry(self, row: JobRow) -> str:
        """Run a failed or canceled job of this app again, with the same inputs and choices."""
        batch = uuid.uuid4().hex
        previous = self.deliveries.get(row.id)

        def work() -> list[str]:
            params = self._given.get(row.id, row.params)
            job = self.service.jobs.create(Caller(), row.tool, list(row.input_file_ids), params, row.output_format)
            self._given[job.id] = params
            if previous is not None:
                self.deliveries.add(Delivery(job.id, previous.folder, previous.policy, batch, previous.inputs))
            return [job.id]

        def done(ids: list[str]) -> None:
            self.submitted.emit(batch, ids)
            self._publish()

        self._worker.run(work, done, self._on_action_error)
        return batch
