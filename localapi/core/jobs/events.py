"""The event feed: every change of a job, in order, for waiting requests, SSE streams and webhooks.

Each state change of a job appends a row to ``job_events`` in the same transaction as the change,
with a snapshot of the job as it then was: no transition is lost, whatever process made it, and
the row's ``seq`` is the event id clients resume from (``Last-Event-ID``).

A :class:`EventFeed` in each process tails that table. A change made in this process hands its
events over as it commits, and the committing thread delivers them at once without reading them
back; a change made by another process (``filekiln worker``) rings this process's bell
(:mod:`localapi.core.bells`) and is read from the table then, or within ``poll_interval`` (0.5 s) at
the latest, and so is anything a gap in the handed events leaves in doubt. Listeners are asyncio queues (a
waiting request or an SSE stream holds no thread and no database connection while it waits) or
plain callables (the webhook outbox).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from localapi.core.bells import EVENTS, Bells
from localapi.core.db import Connection, Database, Row, now
from localapi.core.errors import RateLimited
from localapi.core.jobs.records import Job
from localapi.core.states import JobStatus
from localapi.core.workflows.records import Workflow

log = logging.getLogger("filekiln.events")

CREATED = "job.created"  # once per job, before its first job.queued; for webhooks, not streamed
DELETED = "job.deleted"  # the job's last snapshot, as it is deleted; for in-process listeners, not streamed
PROGRESS = "job.progress"
TYPE_OF_STATUS = {
    JobStatus.QUEUED: "job.queued",
    JobStatus.PROCESSING: "job.processing",
    JobStatus.DONE: "job.done",
    JobStatus.FAILED: "job.failed",
    JobStatus.CANCELED: "job.canceled",
}
TERMINAL_TYPES = frozenset({"job.done", "job.failed", "job.canceled"})
WORKFLOW_TYPES = frozenset({"workflow.done", "workflow.failed", "workflow.canceled"})  # a workflow's end
STREAMED_TYPES = frozenset({*TYPE_OF_STATUS.values(), PROGRESS, *WORKFLOW_TYPES})
TAIL_BATCH = 500
# events a listener holds for a client that does not read them: past this its stream ends, and the client
# resumes from the feed (Listener.offer)
MAX_QUEUED = 10_000


@dataclass(frozen=True)
class JobEvent:
    """A change of a job (``job.*``), or a workflow's end (``workflow.*``), with a snapshot of it."""

    seq: int
    type: str
    subject: Job | Workflow
    created_at: float

    @property
    def job(self) -> Job:
        """The job of a ``job.*`` event (check :attr:`workflow` first where workflow events can come)."""
        if not isinstance(self.subject, Job):
            raise TypeError(f"{self.type} is not a job's event")
        return self.subject

    @property
    def workflow(self) -> Workflow | None:
        return self.subject if isinstance(self.subject, Workflow) else None

    @property
    def subject_id(self) -> str:
        return self.subject.id

    @property
    def key_id(self) -> str | None:
        return self.subject.key_id

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_TYPES or self.type in WORKFLOW_TYPES

    @classmethod
    def from_row(cls, row: Row) -> JobEvent:
        data = json.loads(row["job"])
        subject: Job | Workflow
        if row["type"] in WORKFLOW_TYPES:
            subject = Workflow.from_snapshot(data)
        else:
            data["status"] = JobStatus(data["status"])
            subject = Job(**data)
        return cls(seq=row["seq"], type=row["type"], subject=subject, created_at=row["created_at"])


_made = threading.local()  # the events recorded by this thread's open change (EventFeed.changing)


def append(conn: Connection, job_id: str, *event_types: str) -> Job | None:
    """Record ``event_types`` for ``job_id``, in order, with a snapshot of its row; call inside the changing
    transaction. Returns the snapshot (None: no such job)."""
    row = conn.execute("select * from jobs where id = ?", (job_id,)).fetchone()
    if row is None:
        return None
    job = Job.from_row(row)
    created = now()
    # vars(): the row's fields as they are (strings, numbers, lists of ids, params); asdict would deep-copy them
    snapshot = json.dumps(vars(job))
    for event_type in event_types:
        seq = conn.execute("insert into job_events (job_id, key_id, type, job, created_at) values (?, ?, ?, ?, ?)"
                           " returning seq", (job.id, job.key_id, event_type, snapshot, created)).fetchone()[0]
        _made_event(seq, event_type, job, created)
    return job


def append_workflow(conn: Connection, workflow: Workflow, event_type: str) -> None:
    """Record a workflow's end (``workflow.done|failed|canceled``); call inside the changing transaction."""
    created = now()
    seq = conn.execute("insert into job_events (job_id, key_id, type, job, created_at) values (?, ?, ?, ?, ?)"
                       " returning seq", (workflow.id, workflow.key_id, event_type, json.dumps(workflow.snapshot()),
                                          created)).fetchone()[0]
    _made_event(seq, event_type, workflow, created)


def _made_event(seq: int | None, event_type: str, subject: Job | Workflow, created: float) -> None:
    made: list[JobEvent] | None = getattr(_made, "events", None)
    if made is not None and seq is not None:
        made.append(JobEvent(seq=seq, type=event_type, subject=subject, created_at=created))


class Listener:
    """An asyncio queue of the events of one job (or one workflow's end), of one workflow's jobs and its
    end (``workflow_id``), or of every job and workflow of one key."""

    def __init__(self, loop: asyncio.AbstractEventLoop, job_id: str | None, key_id: str | None,
                 types: frozenset[str], workflow_id: str | None = None, owner: str | None = None) -> None:
        self.loop = loop
        self.job_id = job_id
        self.key_id = key_id
        self.workflow_id = workflow_id
        self.types = types
        self.owner = owner  # whose streams it counts against (a key, or an address without one)
        # None: the stream ends (the server is stopping, or its client fell too far behind)
        self.queue: asyncio.Queue[JobEvent | None] = asyncio.Queue(MAX_QUEUED)
        self.ended = False

    def offer(self, event: JobEvent | None) -> None:
        """On the listener's loop: queue ``event``. A queue that is full ends the stream instead: what
        waits in it is dropped, and the client, which comes back with ``Last-Event-ID``, reads it from
        the feed; so a client that does not read holds at most :data:`MAX_QUEUED` events."""
        if self.ended:
            return
        if event is None or self.queue.full():
            self.ended = True
            while not self.queue.empty():
                self.queue.get_nowait()
            event = None
        self.queue.put_nowait(event)

    def wants(self, event: JobEvent) -> bool:
        if event.type not in self.types:
            return False
        if self.workflow_id is not None:
            return of_workflow(event, self.workflow_id)
        if self.job_id is not None:
            return event.subject_id == self.job_id
        return event.key_id == self.key_id


def of_workflow(event: JobEvent, workflow_id: str) -> bool:
    """A change of one of the workflow's jobs, or the workflow's own end."""
    if event.workflow is not None:
        return event.subject_id == workflow_id
    return event.job.workflow_id == workflow_id


class EventFeed:
    """Writes job events with their changes and tails them for this process's listeners."""

    def __init__(self, db: Database, poll_interval: float = 0.5, bells: Bells | None = None) -> None:
        self.db = db
        self.bells = bells  # wakes the feeds of the other processes on this data dir
        self.poll_interval = poll_interval
        self._listeners: set[Listener] = set()
        self._callbacks: list[Callable[[JobEvent], None]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._handed: list[JobEvent] = []  # committed in this process, not delivered yet (under _lock)
        self._delivering = threading.Lock()  # one deliverer at a time, in order: the tail, or a committing thread
        row = self.db.one("select max(seq) as seq from job_events")
        self.last_seq: int = int(row["seq"] or 0) if row else 0

    # ---- writing ----

    @contextmanager
    def changing(self) -> Iterator[Connection]:
        """A transaction for a job change; the events it records go to the tail once it commits."""
        made: list[JobEvent] = []
        _made.events = made
        try:
            with self.db.transaction() as conn:
                yield conn
        finally:
            _made.events = None
        self._hand(made)

    def change(self, job_id: str, event_type: str, sql: str, *args: Any) -> int:
        """Run one UPDATE of a job; when it changed the row, record ``event_type`` with it. Returns rows changed."""
        with self.changing() as conn:
            changed = conn.execute(sql, args).rowcount
            if changed:
                append(conn, job_id, event_type)
        return int(changed)

    def _hand(self, events: list[JobEvent]) -> None:
        if not events:
            return
        with self._lock:
            tailing = self._thread is not None  # if not (a CLI run), the table has them for whoever reads it
            if tailing:
                self._handed.extend(events)
        if tailing and not self._deliver_handed():
            self.notify()
        if self.bells is not None:
            self.bells.ring(EVENTS)

    def _deliver_handed(self) -> bool:
        """Deliver the handed events on this thread, the committing one, when they follow the last one
        delivered: a listener hears of a change without waiting for the tail's thread to be scheduled.
        False when some are left to the tail (a gap before them, or the tail delivering just now)."""
        if not self._delivering.acquire(blocking=False):
            return False
        try:
            events = self._take_handed()
            if events:
                self._deliver(events)
            with self._lock:
                return not self._handed
        finally:
            self._delivering.release()

    def notify(self) -> None:
        """A change was committed in this process: deliver it now rather than at the next poll."""
        self._wake.set()

    # ---- reading ----

    def since(self, seq: int, *, job_id: str | None = None, key_id: str | None = None,
              limit: int = TAIL_BATCH) -> list[JobEvent]:
        """Recorded events after ``seq``, oldest first, of one job or of one key's jobs (or all)."""
        where: list[str] = ["seq > ?"]
        args: list[Any] = [seq]
        if job_id is not None:
            where.append("job_id = ?")
            args.append(job_id)
        elif key_id is not None:
            where.append("key_id is not distinct from ?")
            args.append(key_id)
        rows = self.db.all(f"select * from job_events where {' and '.join(where)} order by seq limit ?",
                           *args, limit)
        return [JobEvent.from_row(r) for r in rows]

    def latest(self, job_id: str) -> JobEvent | None:
        row = self.db.one("select * from job_events where job_id = ? order by seq desc limit 1", job_id)
        return JobEvent.from_row(row) if row is not None else None

    def listen(self, job_id: str | None = None, key_id: str | None = None,
               types: frozenset[str] = STREAMED_TYPES, workflow_id: str | None = None,
               owner: str | None = None, limit: int = 0) -> Listener:
        """Start receiving live events on the running asyncio loop; pair with :meth:`unlisten`. With
        ``owner`` and ``limit``, refused (429 ``too_many_streams``) when ``owner`` has ``limit`` already."""
        listener = Listener(asyncio.get_running_loop(), job_id, key_id, types, workflow_id, owner)
        with self._lock:
            if owner is not None and limit and sum(1 for other in self._listeners if other.owner == owner) >= limit:
                raise RateLimited(f"{limit} event streams are open for this caller already, as many as it may "
                                  "have at once; close one first.", code="too_many_streams",
                                  headers={"Retry-After": "5"})
            self._listeners.add(listener)
        return listener

    def unlisten(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.discard(listener)

    def end_listeners(self) -> None:
        """The server is stopping: every listener gets ``None``, so that a waiting request answers with the
        job as it stands and an event stream ends cleanly (its client comes back with ``Last-Event-ID``),
        instead of holding the shutdown until its grace period runs out and being cut off."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener.loop.call_soon_threadsafe(listener.offer, None)
            except RuntimeError:  # its loop has closed: nobody waits on it any more
                pass

    def on_event(self, callback: Callable[[JobEvent], None]) -> Callable[[], None]:
        """Call ``callback`` for every event from now on; returns what stops it. It is called in order, one
        event at a time, on the tailing thread or on the thread that committed the change: it must be quick."""
        with self._lock:
            self._callbacks.append(callback)

        def off() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return off

    @property
    def listening(self) -> int:
        with self._lock:
            return len(self._listeners)

    # ---- the tail ----

    def start(self) -> None:
        """Start tailing (once: the desktop and the HTTP app may both ask)."""
        with self._lock:
            if self._thread is None:
                self._stopping.clear()
                self._thread = threading.Thread(target=self._tail, daemon=True, name="filekiln-events")
                self._thread.start()
            else:
                return
        if self.bells is not None:
            self.bells.listen(EVENTS, self.notify)  # changes other processes make

    def stop(self) -> None:
        if self.bells is not None and self._thread is not None:
            self.bells.unlisten(EVENTS)
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _tail(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.poll_interval)
            self._wake.clear()
            try:
                self.poll()
            except Exception:
                log.exception("reading the event feed failed")

    def _take_handed(self) -> list[JobEvent]:
        """The handed events that follow the last delivered one without a gap, in order. A gap (another
        process's event, or a change of this one that has committed but not been handed yet) leaves the
        rest for the table, which holds them all."""
        with self._lock:
            handed = sorted((e for e in self._handed if e.seq > self.last_seq), key=lambda e: e.seq)
            run = 0
            while run < len(handed) and handed[run].seq == self.last_seq + 1 + run:
                run += 1
            self._handed = handed[run:]
            return handed[:run]

    def poll(self) -> int:
        """Deliver every event recorded since the last poll; returns how many."""
        delivered = 0
        with self._delivering:
            while True:
                events = self._take_handed() or self.since(self.last_seq)
                if not events:
                    return delivered
                self._deliver(events)
                delivered += len(events)
                if len(events) < TAIL_BATCH:
                    return delivered

    def _deliver(self, events: list[JobEvent]) -> None:
        """Hand ``events`` (in order, following the last delivered) to listeners and callbacks."""
        with self._lock:
            listeners = list(self._listeners)
            callbacks = list(self._callbacks)
        for event in events:
            for listener in listeners:
                if listener.wants(event):
                    try:
                        listener.loop.call_soon_threadsafe(listener.offer, event)
                    except RuntimeError:  # its loop is closed: the request is gone
                        self.unlisten(listener)
            for callback in callbacks:
                try:
                    callback(event)
                except Exception:
                    log.exception("an event listener failed")
        self.last_seq = events[-1].seq
