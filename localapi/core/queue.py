"""The queue: Huey on SQLite carries "run job X"; the job table decides everything else.

One module owns the Huey instance (built at run time for the chosen data dir);
the task is registered here and is a few lines: claim, run supervised, record.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from huey import Huey
from huey.consumer import Consumer, Worker
from huey.storage import SqliteStorage

log = logging.getLogger("filekiln.queue")

TASK_NAME = "run_job"


class JobQueue:
    """Huey instance with the one task FileKiln enqueues.

    Enqueueing needs only the task's name; the worker side installs what runs it (``handler``)
    before it starts consuming.
    """

    def __init__(self, path: Path) -> None:
        self.huey = Huey(name="filekiln", storage_class=_QueueStorage, filename=str(path), results=False, utc=True,
                         timeout=30)
        self.handler: Callable[[str], Any] = _no_handler
        self.doorbell = Doorbell()

        @self.huey.task(name=TASK_NAME)  # type: ignore[untyped-decorator]
        def run_job(job_id: str) -> None:
            self.handler(job_id)

        self._task = run_job

    def enqueue(self, job_id: str) -> None:
        """Hand the job to an idle worker of this process, or else put it in Huey's queue for any
        worker of any process (and wake this process's, should one come free now)."""
        if self.doorbell.hand(job_id):
            return
        self._task(job_id)
        self.doorbell.ring()

    def pending(self) -> int:
        return int(self.huey.pending_count())

    def flush(self) -> None:
        self.huey.flush()


class _QueueStorage(SqliteStorage):  # type: ignore[misc]
    """Huey's SQLite storage without a disk sync per message.

    The queue only carries "run job X", and every start rebuilds it from the job table, so a
    message lost to a power cut costs nothing; a sync per enqueue and per dequeue cost some 8 ms
    each on an ordinary disk. WAL with ``synchronous=NORMAL`` never corrupts the file.
    """

    def _create_connection(self) -> Any:
        conn = super()._create_connection()
        conn.execute("pragma synchronous=normal")
        return conn


class Doorbell:
    """Wakes idle workers of this process, and hands them jobs created in this process.

    Huey's workers poll the queue; between polls an idle worker sleeps. Here it sleeps on this
    doorbell instead. A job created by the API, the CLI or the desktop in this process while a
    worker sleeps is handed to it directly: it starts at once, and costs no write to Huey's queue
    and no read back. When every worker is busy the job goes through Huey's queue, where any
    worker of any process takes it, and the ring wakes one of this process's as it comes free.
    Jobs enqueued by another process (a second ``filekiln serve``) are found by the poll.

    A handed job is safe from a crash as much as a queued one: its row is QUEUED until a worker
    claims it, and every start enqueues the QUEUED rows again.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._rung = 0
        self._sleeping = 0
        self._handed: deque[str] = deque()

    def ring(self) -> None:
        with self._cond:
            self._rung += 1
            self._cond.notify_all()

    def hand(self, job_id: str) -> bool:
        """Give ``job_id`` to a sleeping worker; False when none sleeps but for jobs handed already."""
        with self._cond:
            if self._sleeping <= len(self._handed):
                return False
            self._handed.append(job_id)
            self._rung += 1
            self._cond.notify_all()
            return True

    def take(self) -> str | None:
        """A job handed to this process's workers, if one waits."""
        with self._cond:
            return self._handed.popleft() if self._handed else None

    def wait(self, seen: int, timeout: float) -> int:
        """Sleep until rung after ``seen`` rings, or ``timeout``; return the rings so far."""
        with self._cond:
            self._sleeping += 1
            try:
                self._cond.wait_for(lambda: self._rung != seen, timeout=timeout)
            finally:
                self._sleeping -= 1
            return self._rung

    @property
    def rung(self) -> int:
        with self._cond:
            return self._rung


def _no_handler(job_id: str) -> None:
    raise RuntimeError(f"no worker handler installed to run {job_id}")


class _DoorbellWorker(Worker):  # type: ignore[misc]
    """A Huey worker that first runs the jobs handed to it, and whose idle sleep ends when the doorbell
    rings (or the consumer stops)."""

    doorbell: Doorbell
    run_handed: Callable[[str], Any]

    def loop(self, now: Any = None) -> None:
        self._seen = self.doorbell.rung  # rings from here on are jobs this dequeue may not have seen
        job_id = self.doorbell.take()
        if job_id is None:
            super().loop(now)
            return
        try:
            self.run_handed(job_id)
        except Exception:
            self._logger.exception("Unhandled error while running job %s.", job_id)

    def sleep(self) -> None:
        if not self.stop_flag.is_set():
            self.doorbell.wait(self._seen, self.max_delay)


class _QuietConsumer(Consumer):  # type: ignore[misc]
    """A consumer that can run in a background thread (no signal handlers), with doorbell workers."""

    def __init__(self, huey: Any, doorbell: Doorbell, run_handed: Callable[[str], Any], **kwargs: Any) -> None:
        self.worker_class = type("Worker", (_DoorbellWorker,), {"doorbell": doorbell,
                                                                "run_handed": staticmethod(run_handed)})
        super().__init__(huey, **kwargs)

    def _set_signal_handlers(self) -> None:
        pass


class WorkerPool:
    """Worker threads pulling job ids from the queue; each supervises one child process at a time."""

    def __init__(self, queue: JobQueue, workers: int, poll_interval: float,
                 on_tick: Callable[[], None] | None = None, tick_seconds: float = 10.0) -> None:
        self.queue = queue
        self.workers = max(1, workers)
        self.stopping = threading.Event()
        # a short, flat polling delay: a job is picked up within ~poll_interval even after a quiet spell
        self.consumer = _QuietConsumer(
            queue.huey, queue.doorbell, lambda job_id: queue.handler(job_id),
            workers=max(1, workers), periodic=False, initial_delay=poll_interval,
            backoff=1.0, max_delay=poll_interval, worker_type="thread", check_worker_health=True,
        )
        self._on_tick = on_tick
        self._tick_seconds = tick_seconds
        self._ticker: threading.Thread | None = None

    def start(self) -> None:
        self.consumer.start()
        if self._on_tick is not None:
            self._ticker = threading.Thread(target=self._tick_loop, daemon=True, name="filekiln-housekeeping")
            self._ticker.start()

    def _tick_loop(self) -> None:
        assert self._on_tick is not None
        while not self.stopping.wait(self._tick_seconds):
            try:
                self._on_tick()
            except Exception:
                log.exception("housekeeping failed")

    def stop(self, timeout: float = 15.0) -> None:
        """Stop taking jobs; running ones are killed and put back in the queue, not lost."""
        self.stopping.set()
        self.queue.doorbell.ring()  # idle workers see the stop flag now
        self.consumer.shutdown_timeout = timeout
        self.consumer.stop(graceful=True)
