"""The queue: Huey carries "run job X"; the job table decides everything else.

One module owns the Huey instance (built at run time for the chosen data dir and ``queue_url``);
the task is registered here and is a few lines: claim, run supervised, record. Huey keeps its
queue in SQLite in the data dir (the default), or in Redis (``queue_url = "redis://..."``) when
API and worker processes run on several machines.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from localapi.config import SettingError
from localapi.core.bells import QUEUE, Bells
from localapi.core.urls import redacted

# huey.storage imports the redis and psycopg packages whenever they are installed, at some 0.1 s each; the
# queue in the data dir needs neither, so they stay out here: redis is imported only for a redis:// queue_url
# (_redis_storage), psycopg only for a postgresql:// database_url (localapi/core/db.py), never by Huey
_kept_out = [name for name in ("redis", "psycopg") if name not in sys.modules]
for _name in _kept_out:
    sys.modules[_name] = None  # type: ignore[assignment]
try:
    from huey import Huey
    from huey.consumer import Consumer, Worker
    from huey.storage import SqliteStorage
finally:
    for _name in _kept_out:
        del sys.modules[_name]

log = logging.getLogger("filekiln.queue")

TASK_NAME = "run_job"
REDIS_SCHEMES = ("redis", "rediss")
# a blocked read ends this often, so that a stopping worker is not held up longer
REDIS_READ_TIMEOUT = 0.5
REDIS_CONNECT_TIMEOUT = 3.0
# waits between attempts while the queue cannot be reached (seconds, doubling up to the last)
OUTAGE_BACKOFF = (0.5, 10.0)


class QueueError(SettingError):
    """The queue cannot be used as configured; the message says why in words, never with the password."""


@dataclass(frozen=True)
class QueueTarget:
    """Where the queue lives: ``kind`` sqlite (``shown`` is the file) or redis (``shown`` is the URL
    without its password; ``url`` is the whole URL)."""

    kind: str
    shown: str
    url: str = ""
    host: str = ""
    port: int = 0
    password: str = ""

    @property
    def remote(self) -> bool:
        return self.kind == "redis"


def queue_target(queue_url: str, path: Path) -> QueueTarget:
    """The queue ``queue_url`` names (empty: Huey on SQLite at ``path``); QueueError for any other URL."""
    url = queue_url.strip()
    if not url:
        return QueueTarget("sqlite", str(path))
    usage = ("give redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS), or leave queue_url empty for the queue "
             "in the data dir")
    try:
        parts = urlsplit(url)
        port = parts.port or 6379
    except ValueError:
        raise QueueError(f"queue_url {redacted(url)!r} is not a URL FileKiln can use: {usage}.") from None
    if parts.scheme not in REDIS_SCHEMES:
        raise QueueError(f"queue_url {redacted(url)!r} is not a queue FileKiln can use: {usage}.")
    host = parts.hostname or ""
    db = parts.path.strip("/") or "0"
    if not host or not db.isdigit():
        what = "names no host" if not host else f"names the database {db!r}, not a number"
        raise QueueError(f"queue_url {redacted(url)!r} {what}: {usage}.")
    shown_host = f"[{host}]" if ":" in host else host
    return QueueTarget("redis", f"{parts.scheme}://{shown_host}:{port}/{db}", url, host, port,
                       unquote(parts.password or ""))


def _redis_storage() -> type:
    """Huey's Redis storage, with the redis package imported only now, reading with BRPOP."""
    try:
        import redis
        from huey.storage import RedisStorage
    except ImportError:
        raise QueueError("queue_url names Redis, but the redis package is not installed here: "
                         "pip install 'filekiln[scale]'.") from None

    class RedisQueueStorage(_NoRevokes, RedisStorage):  # type: ignore[misc]
        """Huey's RedisStorage built from the URL here, since huey.storage was imported without redis:
        a pool with timeouts (an unreachable host fails in seconds, not minutes) and a blocking read."""

        def __init__(self, name: str, url: str, read_timeout: float) -> None:
            # the socket waits out a whole blocked read (BRPOP) and then some
            self.pool = redis.ConnectionPool.from_url(url, socket_connect_timeout=REDIS_CONNECT_TIMEOUT,
                                                      socket_timeout=read_timeout + REDIS_CONNECT_TIMEOUT)
            self.conn = redis.Redis(connection_pool=self.pool)
            self.connection_params: dict[str, Any] = {}
            self.name = self.clean_name(name)
            self.queue_key = f"huey.redis.{self.name}"
            self.schedule_key = f"huey.schedule.{self.name}"
            self.result_key = f"huey.results.{self.name}"
            self.counter_key = f"huey.counters.{self.name}"
            self.notify_prefix = f"huey.notify.{self.name}."
            self.notify_result = False
            self.notify_result_ttl = 60
            self.blocking = True
            self.read_timeout = read_timeout

        def dequeue(self) -> Any:
            """A message, or None after ``read_timeout`` without one; ConnectionError when Redis is away."""
            try:
                reply = self.conn.brpop([self.queue_key], timeout=self.read_timeout)
            except redis.TimeoutError:
                return None
            return None if reply is None else reply[1]

        def read_schedule(self, ts: Any) -> list[bytes]:
            return []  # FileKiln schedules no task: this spares Redis the consumer's read every second

    return RedisQueueStorage


def explain(exc: BaseException, target: QueueTarget) -> str:
    """What went wrong talking to the queue, in words (never with the password)."""
    text = str(exc)
    low = text.lower()
    cause = exc.__context__
    where = f"{target.host}:{target.port}"
    if "without any password configured" in low:
        said = "Redis has no password set, yet queue_url gives one"
    elif "wrongpass" in low or "invalid password" in low or "invalid username-password" in low:
        said = "Redis refused the password in queue_url (authentication failed)"
    elif "noauth" in low or "authentication required" in low or "already authenticated" in low:
        said = "Redis wants a password: give it in queue_url as redis://:PASSWORD@HOST:PORT/DB"
    elif isinstance(cause, ConnectionRefusedError) or "connection refused" in low:
        said = f"nothing listens on {where} (connection refused); is redis-server running there"
    elif "name or service not known" in low or "nodename nor servname" in low or "getaddrinfo" in low \
            or "temporary failure in name resolution" in low:
        said = f"the host name {target.host!r} is unknown"
    elif "timeout" in low or "timed out" in low:
        said = f"{where} did not answer within {REDIS_CONNECT_TIMEOUT:g} s"
    else:
        said = text or type(exc).__name__
    return said.replace(target.password, "***") if target.password else said


class JobQueue:
    """Huey instance with the one task FileKiln enqueues.

    Enqueueing needs only the task's name; the worker side installs what runs it (``handler``)
    before it starts consuming. A remote queue (Redis) that cannot be reached costs no request:
    the job stays QUEUED in the job table, and workers put its message back once the queue answers
    (:meth:`resync`).
    """

    def __init__(self, path: Path, url: str = "") -> None:
        self.target = queue_target(url, path)
        if self.target.remote:
            self.huey = Huey(name="filekiln", storage_class=_redis_storage(), url=self.target.url,
                             read_timeout=REDIS_READ_TIMEOUT, results=False, utc=True)
        else:
            self.huey = Huey(name="filekiln", storage_class=_QueueStorage, filename=str(path), results=False,
                             utc=True, timeout=30)
        self.handler: Callable[[str], Any] = _no_handler
        self.doorbell = Doorbell()
        # wakes the workers of the other processes on this data dir (a Redis queue wakes its own readers)
        self.bells: Bells | None = None
        self.outage = Outage(self.target)
        # the ids of the jobs the table holds QUEUED, oldest first (set by the service; see resync)
        self.waiting: Callable[[], list[str]] = list
        self._resync_lock = threading.Lock()

        @self.huey.task(name=TASK_NAME)  # type: ignore[untyped-decorator]
        def run_job(job_id: str) -> None:
            self.handler(job_id)

        self._task = run_job

    @property
    def remote(self) -> bool:
        return self.target.remote

    def enqueue(self, job_id: str) -> None:
        """Hand the job to an idle worker of this process, or else put it in Huey's queue for any
        worker of any process (and wake this process's, should one come free now)."""
        if self.doorbell.hand(job_id):
            return
        try:
            self._task(job_id)
        except Exception as exc:
            if not self.remote:
                raise
            self.outage.failed(exc)  # the job stays QUEUED: resync puts its message in once Redis is back
        else:
            self.outage.ended()
        self.doorbell.ring()
        if self.bells is not None and not self.remote:
            self.bells.ring(QUEUE)

    def pending(self) -> int:
        """Messages waiting in the queue (0 while a remote queue cannot be reached)."""
        try:
            return int(self.huey.pending_count())
        except Exception as exc:
            if not self.remote:
                raise
            self.outage.failed(exc)
            return 0

    def flush(self) -> None:
        self.huey.flush()

    def check(self) -> None:
        """Raise QueueError, in words, when the queue cannot be reached (Redis: a PING)."""
        if self.remote:
            try:
                self.huey.storage.conn.ping()
            except Exception as exc:
                raise QueueError(f"The job queue at {self.target.shown} cannot be reached: "
                                 f"{explain(exc, self.target)}.") from None

    def describe(self) -> dict[str, Any]:
        """What the queue runs on, for GET /health: kind (sqlite or redis), target (the file, or the URL
        without its password), ok, and error (words, or None)."""
        error = None
        if self.remote:
            try:
                self.huey.storage.conn.ping()
            except Exception as exc:
                error = explain(exc, self.target)
        return {"kind": self.target.kind, "target": self.target.shown, "ok": error is None, "error": error}

    def resync(self) -> int:
        """Put back in a remote queue the messages an outage lost; returns how many.

        A message means "a job waits", and any worker that takes one runs the fairest QUEUED job, so
        the queue needs as many messages as the table has QUEUED jobs. A job created while Redis was
        away, or whose message a restarted Redis forgot, gets one here; a message too many costs a
        worker one look at the job table.
        """
        if not self.remote:
            return 0
        with self._resync_lock:
            waiting = self.waiting()
            missing = len(waiting) - int(self.huey.pending_count())
            for job_id in waiting[-missing:] if missing > 0 else ():
                self._task(job_id)
        if missing > 0:
            log.info("queue %s: put back %d message(s) for queued jobs", self.target.shown, missing)
        return max(missing, 0)


class Outage:
    """Whether a remote queue is answering, logged once as it goes away and once as it is back."""

    def __init__(self, target: QueueTarget) -> None:
        self.target = target
        self._lock = threading.Lock()
        self.error: str | None = None

    def failed(self, exc: BaseException) -> None:
        said = explain(exc, self.target)
        with self._lock:
            first, self.error = self.error is None, said
        if first:
            log.warning("the job queue at %s cannot be reached (%s); new jobs wait in the job table, and workers "
                        "try again with a growing pause", self.target.shown, said)

    def ended(self) -> bool:
        """Mark the queue as answering; True when it had been away."""
        with self._lock:
            was, self.error = self.error, None
        if was is not None:
            log.warning("the job queue at %s answers again", self.target.shown)
        return was is not None


class _NoRevokes:
    """FileKiln never revokes a task nor keeps a result: the job table says what runs, and how it ended.
    Huey still reads a task's revoke flags before running it and clears them after: a round trip to Redis
    (or a write to the SQLite queue) per job for nothing, and with Redis going away just then, an error
    after the job itself has run. Both are answered here without asking the store."""

    def peek_many(self, keys: list[str]) -> dict[str, Any]:
        return {}

    def delete_data(self, key: str) -> bool:
        return False


class _QueueStorage(_NoRevokes, SqliteStorage):  # type: ignore[misc]
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
    Jobs enqueued by another process (a second ``filekiln serve``) are found by the poll; on Redis
    an idle worker waits in a blocking read instead, and takes them the moment they are queued.

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
            self._cond.notify()  # one sleeper per job: the others would wake only to find nothing to do
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
    queue: JobQueue
    _pause = 0.0  # the next wait while the queue cannot be reached

    def loop(self, now: Any = None) -> None:
        self._seen = self.doorbell.rung  # rings from here on are jobs this dequeue may not have seen
        job_id = self.doorbell.take()
        if job_id is None:
            self._dequeue_and_run(now)
            return
        try:
            self.run_handed(job_id)
        except Exception:
            self._logger.exception("Unhandled error while running job %s.", job_id)

    def _dequeue_and_run(self, now: Any) -> None:
        """Huey's Worker.loop, but an unreachable queue is logged once and tried again after a pause
        that grows (not a traceback every poll), and on its return the lost messages are put back."""
        try:
            task = self.huey.dequeue()
        except Exception as exc:
            if not self.queue.remote:
                self._logger.exception("Error reading from queue")
                self.sleep()
                return
            self.queue.outage.failed(exc)
            self._pause = min(max(self._pause * 2, OUTAGE_BACKOFF[0]), OUTAGE_BACKOFF[1])
            if not self.stop_flag.is_set():  # handed jobs still run meanwhile: this waits on the doorbell
                self.doorbell.wait(self._seen, self._pause)
            return
        if self._pause:
            self._pause = 0.0
            self.queue.outage.ended()
            try:
                self.queue.resync()
            except Exception:
                self._logger.exception("could not put back the messages of queued jobs")
        if task is not None:
            self.delay = self.default_delay
            try:
                self.huey.execute(task, now)
            except Exception:
                self._logger.exception("Unhandled error during execution of task %s.", task.id)
        elif not self.huey.storage.blocking:
            self.sleep()

    def sleep(self) -> None:
        if not self.stop_flag.is_set():
            self.doorbell.wait(self._seen, self.max_delay)


class _QuietConsumer(Consumer):  # type: ignore[misc]
    """A consumer that can run in a background thread (no signal handlers), with doorbell workers."""

    def __init__(self, queue: JobQueue, run_handed: Callable[[str], Any], **kwargs: Any) -> None:
        self.worker_class = type("Worker", (_DoorbellWorker,), {"doorbell": queue.doorbell, "queue": queue,
                                                                "run_handed": staticmethod(run_handed)})
        super().__init__(queue.huey, **kwargs)

    def _set_signal_handlers(self) -> None:
        pass


class WorkerPool:
    """Worker threads pulling job ids from the queue; each supervises one child process at a time."""

    def __init__(self, queue: JobQueue, workers: int, poll_interval: float,
                 on_tick: Callable[[], None] | None = None, tick_seconds: float = 10.0) -> None:
        self.queue = queue
        self.workers = max(1, workers)
        self.stopping = threading.Event()
        # a flat polling delay, the fallback of the doorbell and the bells: a job they missed is picked up
        # within ~poll_interval even after a quiet spell (on Redis a worker waits in a blocking read
        # instead, and takes a job the moment it is queued)
        self.consumer = _QuietConsumer(
            queue, lambda job_id: queue.handler(job_id),
            workers=max(1, workers), periodic=False, initial_delay=poll_interval,
            backoff=1.0, max_delay=poll_interval, worker_type="thread", check_worker_health=True,
        )
        self._on_tick = on_tick
        self._tick_seconds = tick_seconds
        self._ticker: threading.Thread | None = None

    def start(self) -> None:
        if self.queue.bells is not None and not self.queue.remote:
            self.queue.bells.listen(QUEUE, self.queue.doorbell.ring)  # jobs other processes queue
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
            if self.queue.remote:  # messages lost with a restarted Redis, or not sent while it was away
                try:
                    self.queue.resync()
                except Exception as exc:
                    self.queue.outage.failed(exc)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop taking jobs; running ones are killed and put back in the queue, not lost."""
        self.stopping.set()
        if self.queue.bells is not None and not self.queue.remote:
            self.queue.bells.unlisten(QUEUE)
        self.queue.doorbell.ring()  # idle workers see the stop flag now
        self.consumer.shutdown_timeout = timeout
        self.consumer.stop(graceful=True)
