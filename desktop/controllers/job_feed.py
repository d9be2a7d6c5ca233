"""Following every job live through the service's job-event feed.

The feed is the one the API's waiting requests, event streams and webhooks use: one read of the newest
jobs at start, then every change as an event, whoever made it (this app, an API client, a ``filekiln
worker``). The feed calls us on its own thread; a :class:`~desktop.threads.Relay` queues each event over
to the GUI thread, where events are merged per job and applied in batches (see :class:`JobFeed`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal

from desktop.controllers.job_rows import JobNames
from desktop.store.deliveries import DeliveryStore
from desktop.threads import Background, Relay
from localapi.core.errors import ServiceError
from localapi.core.jobs import Caller, Job
from localapi.core.jobs.events import DELETED, PROGRESS, JobEvent
from localapi.core.service import Service

log = logging.getLogger("filekiln.desktop")


@dataclass(frozen=True)
class _Listing:
    """What one read of the job table found (the newest jobs), for :meth:`JobFeed._on_listing`."""

    jobs: list[Job]  # newest first
    complete: bool  # every job there is fits in the page


class JobFeed(QObject):
    """The newest ``limit`` jobs as last heard of, kept up to date from events.

    Each :class:`JobEvent` from ``service.events`` carries a snapshot of its job. Events are kept per job
    (the newest wins) and applied together: a change of state (queued, processing, done, failed,
    canceled) at the next turn of the event loop, progress at most every ``coalesce_ms``, so a burst of
    progress redraws the table once, not once per event.

    A deleted job (``DELETE /v1/jobs/{id}``, or the app's own delete) leaves with its ``job.deleted``
    event. The job table itself is read only to start (the newest ``limit`` jobs) and, every
    ``sweep_ms``, to find jobs that went without one (a row removed by hand, a feed that fell behind).
    The sweep never changes a job's state; that comes from events alone.
    """

    changed = Signal(list)  # list[Job]: the jobs events changed in this batch ([] after a read); then read jobs()

    def __init__(self, service: Service, deliveries: DeliveryStore, names: JobNames, coalesce_ms: int = 100,
                 sweep_ms: int = 30_000, limit: int = 200, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.deliveries = deliveries
        self.names = names
        self.coalesce_ms = coalesce_ms
        self.limit = limit
        self._reader = Background(1, self)
        self._relay = Relay(self._on_event, self)
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self._flush)
        self.sweep_timer = QTimer(self)
        self.sweep_timer.setInterval(sweep_ms)
        self.sweep_timer.timeout.connect(self.sweep)
        self._started = False
        self.listed = False  # the first read is in: events may be applied
        self._reading = False
        self._jobs: dict[str, Job] = {}  # the table's jobs as last heard of
        self._read_stamps: dict[str, float] = {}  # job id -> updated_at, for jobs known from a read only
        self._pending: dict[str, JobEvent] = {}  # the newest event per job, not yet applied
        self._touched: set[str] = set()  # jobs an event told of since the current read began
        self._gone: set[str] = set()  # deleted jobs: a late event must not bring them back

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

    def wait(self, msecs: int) -> None:
        self._reader.wait(msecs)

    def job(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def newest(self) -> list[Job]:
        """The jobs to show, newest first; older ones past ``limit`` are let go."""
        newest = sorted(self._jobs.values(), key=lambda j: (j.created_at, j.id), reverse=True)
        for job in newest[self.limit:]:
            del self._jobs[job.id]
            self._read_stamps.pop(job.id, None)
        return newest[:self.limit]

    def drop(self, job_ids: Sequence[str]) -> None:
        """Forget deleted jobs, for good: a late event must not bring them back."""
        for job_id in job_ids:
            self._gone.add(job_id)
            self._jobs.pop(job_id, None)
            self._read_stamps.pop(job_id, None)
            self._pending.pop(job_id, None)

    # ---- events ----

    def _receive(self, event: JobEvent) -> None:
        """On the feed's thread: name a job's files and key the first time it is heard of (a read or
        two of the database, here rather than on the GUI thread), then hand the event over."""
        if not self._relay.open or event.workflow is not None:  # a workflow's end: its jobs tell their own
            return
        self.names.learn(event.job)
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
        if not self.listed:
            return  # before the first read is in, events wait for it
        known = len(self._jobs)
        applied = self._apply_pending()
        if applied or len(self._jobs) != known:  # a deletion changes the table too
            self.changed.emit(applied)

    def _apply_pending(self) -> list[Job]:
        events, self._pending = self._pending, {}
        applied = []
        for job_id, event in events.items():
            if job_id in self._gone:
                continue
            if event.type == DELETED:
                self.drop([job_id])
                continue
            stamp = self._read_stamps.get(job_id)
            if stamp is not None:
                if event.job.updated_at < stamp:
                    continue  # an event from before the read, delivered after it
                del self._read_stamps[job_id]
            self._jobs[job_id] = event.job
            self._touched.add(job_id)
            applied.append(event.job)
        return applied

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
            self.names.learn(job)
        if page.next_cursor is None:
            self._forget_deleted_jobs({j.id for j in page.items})
        return _Listing(page.items, page.next_cursor is None)

    def _on_read_error(self, exc: BaseException) -> None:
        self._reading = False
        log.warning("reading the jobs failed: %s", exc)
        if not self.listed:
            self.listed = True  # events still come; the next sweep reads again
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
        self.drop(deleted)
        self.listed = True
        self.changed.emit(self._apply_pending())

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
