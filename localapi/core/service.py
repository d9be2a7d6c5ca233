"""The service: every core collaborator built for one data dir. The GUI, the CLI and
the HTTP face all talk to this, never to engines directly."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from converters.base import ToolEnv
from converters.catalogue import Catalogue, load_catalogue
from converters.inputs.sniff import sniff
from localapi.config import Settings
from localapi.core.bells import Bells, RedisRelay
from localapi.core.datadir import make_private
from localapi.core.db import Database, open_database
from localapi.core.files import FileStore
from localapi.core.idempotency import IdempotencyStore
from localapi.core.jobs import Caller, Job, JobService
from localapi.core.jobs.events import EventFeed
from localapi.core.jobs.registry import WorkerRegistry
from localapi.core.jobs.sealed import Sealer
from localapi.core.jobs.worker import JobSettings, JobWorker
from localapi.core.keys import KeyService
from localapi.core.processes import process_identity
from localapi.core.queue import JobQueue, WorkerPool
from localapi.core.ratelimit import RateLimiter, RateLimits, shared_limits
from localapi.core.retention import purge_expired
from localapi.core.signing import LinkSigner
from localapi.core.states import JobStatus
from localapi.core.storage import open_blobs
from localapi.core.switches import AVAILABILITY_TTL, Switches
from localapi.core.webhooks import Webhooks
from localapi.core.workflows.presets import PresetStore
from localapi.core.workflows.service import WorkflowService

log = logging.getLogger("filekiln")

BACKENDS_TTL = 5.0  # GET /health asks a remote queue or bucket at most this often


@dataclass
class Service:
    settings: Settings
    db: Database
    files: FileStore
    keys: KeyService
    switches: Switches
    jobs: JobService
    worker: JobWorker
    events: EventFeed
    queue: JobQueue
    signer: LinkSigner
    idempotency: IdempotencyStore
    limiter: RateLimits
    catalogue: Catalogue
    webhooks: Webhooks
    presets: PresetStore
    workflows: WorkflowService
    pool: WorkerPool | None = None
    registry: WorkerRegistry | None = None  # this process's row in the workers table, while workers run
    _engines: tuple[float, dict[str, dict[str, Any]]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, settings: Settings, catalogue: Catalogue | None = None) -> Service:
        data = settings.data_dir
        make_private(data)
        for sub in ("files", "jobs", "models", "logs"):
            (data / sub).mkdir(parents=True, exist_ok=True)
        db = open_database(settings)
        files = FileStore(db, data / "files", settings.retention_days * 86400, open_blobs(settings, data / "files"))
        catalogue = catalogue or load_catalogue()
        queue = JobQueue(data / "queue.db", settings.queue_url)
        queue.bells = bells = Bells(db, process_identity())
        writes = RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst)
        reads = RateLimiter(settings.read_rate_limit_per_second, settings.read_rate_limit_burst)
        limits = RateLimits(writes, reads)
        if queue.remote:  # job changes reach the processes on other machines, and rate limits hold across them
            redis_db = queue.target.shown.rsplit("/", 1)[1]
            bells.relay = RedisRelay(queue.target.url, redis_db, bells.identity)
            limits = shared_limits(queue.target.url, redis_db, writes, reads)
        # what a remote queue must carry a message for (JobQueue.resync, after Redis was away)
        queue.waiting = lambda: [r["id"] for r in db.all(
            "select id from jobs where status = ? order by created_at", JobStatus.QUEUED)]
        events = EventFeed(db, settings.poll_interval_seconds, bells=bells)
        sealer = Sealer(data / "params.key", settings.params_key)
        switches = Switches(db, ToolEnv(models_dir=data / "models", settings=dict(settings.tools)))
        worker = JobWorker(db, files, catalogue, JobSettings(
            jobs_dir=data / "jobs", models_dir=data / "models",
            tool_settings=dict(settings.tools), memory_limit_mb=settings.job_memory_limit_mb,
            tool_timeouts=dict(settings.tool_timeouts), max_running_per_key=settings.max_running_jobs_per_key,
            warm_children=settings.warm_children),
            enqueue=queue.enqueue, events=events, sealer=sealer)
        keys = KeyService(db)
        jobs = JobService(db, files, catalogue, switches, enqueue=queue.enqueue, data_dir=data, events=events,
                          sealer=sealer)
        presets = PresetStore(db)
        workflows = WorkflowService(db, files, catalogue, switches, jobs, events, sealer, keys, presets,
                                    enqueue=queue.enqueue)
        jobs.ended = worker.ended = workflows.job_ended  # a workflow moves on as each of its jobs ends
        return cls(
            settings=settings, db=db, files=files, keys=keys, switches=switches,
            jobs=jobs, presets=presets, workflows=workflows,
            events=events,
            worker=worker, queue=queue,
            signer=LinkSigner(bytes.fromhex(db.setting_once("signing_secret", secrets.token_hex(32)))),
            idempotency=IdempotencyStore(db, settings.idempotency_hours * 3600),
            limiter=limits,
            catalogue=catalogue,
            webhooks=Webhooks(db, events, settings.webhook_allowed_hosts, settings.webhook_timeout_seconds,
                              settings.webhook_retry_seconds),
        )

    # ---- workers ----

    def start_workers(self, workers: int | None = None) -> None:
        """Recover what a previous run left, then start consuming the queue."""
        count = workers or self.settings.workers
        with self._lock:
            if self.pool is not None:
                return
            counts = self.worker.recover()
            self.queue.flush()  # the job table is the truth: rebuild the queue from it
            counts["requeued"] = self.worker.requeue_all_queued()
            self.worker.clean_work_dirs()
            if any(counts.values()):
                log.info("recovered jobs: %s", counts)
            self.worker.start(count)
            # registered (and told which tools to leave to others) before the first claim
            self.registry = WorkerRegistry(self.db, self.catalogue, self.switches, self.worker)
            self.registry.start(count, self.queue.doorbell.hand)
            self.pool = pool = WorkerPool(self.queue, count, self.settings.poll_interval_seconds,
                                          on_tick=self.housekeeping,
                                          tick_seconds=min(10.0, self.settings.purge_interval_seconds))
            # a message says a job waits; the worker picks the fairest one (JobWorker.run_next)
            self.queue.handler = lambda _job_id: self.worker.run_next(stopping=pool.stopping.is_set)
            pool.start()

    def stop_workers(self, timeout: float = 15.0) -> None:
        with self._lock:
            if self.pool is not None:
                self.pool.stop(timeout)
                self.pool = None
            if self.registry is not None:
                self.registry.stop()
                self.registry = None
            self.worker.stop()

    _last_purge: float = 0.0

    def housekeeping(self) -> None:
        self.worker.recover()
        if self.registry is not None:
            self.registry.beat()  # alive, and what it takes now
        self.workflows.sweep()
        if time.monotonic() - self._last_purge >= self.settings.purge_interval_seconds:
            self._last_purge = time.monotonic()
            self.purge()

    def purge(self) -> int:
        return purge_expired(self.db, self.files)

    def engines(self) -> dict[str, dict[str, Any]]:
        """Every engine the tools name, whether it is installed and its version (kept like tool availability)."""
        known = self._engines
        if known is None or time.monotonic() - known[0] >= AVAILABILITY_TTL:
            found: dict[str, dict[str, Any]] = {}
            for tool in self.catalogue:
                for engine in tool.engines:
                    found.setdefault(engine.name, {"available": engine.available(), "version": engine.version()})
            known = self._engines = (time.monotonic(), found)
        return known[1]

    def models_in_use(self) -> list[dict[str, Any]]:
        """Each model the tools will use here (``Tool.models``): where it is found, how it got there,
        and the tools, by title, that use it. A model not found has ``where`` None."""
        rows: dict[tuple[str, str, str | None], dict[str, Any]] = {}
        for tool in self.catalogue:
            for use in tool.models(self.switches.tool_env):
                row = rows.setdefault((use.kind, use.name, use.where), {
                    "kind": use.kind, "name": use.name, "where": use.where, "source": use.source, "tools": []})
                row["tools"].append(tool.title)
        return list(rows.values())

    _backends: tuple[float, dict[str, dict[str, Any]]] | None = None

    def backends(self) -> dict[str, dict[str, Any]]:
        """What this install runs on (database, queue, file store), each with ``ok`` and ``error`` in words;
        at most BACKENDS_TTL old, as a bucket or Redis is asked over the network."""
        known = self._backends
        if known is None or time.monotonic() - known[0] >= BACKENDS_TTL:
            found = {"database": self.db.describe(),
                     "queue": self.queue.describe(), "storage": self.files.blobs.describe()}
            known = self._backends = (time.monotonic(), found)
        return known[1]

    def health(self) -> dict[str, Any]:
        return {"engines": self.engines(), "brokenModules": dict(self.catalogue.broken), "backends": self.backends(),
                "maintenance": self.switches.maintenance,
                "workers": self.pool is not None, "queued": self.queue.pending(),
                "eventListeners": self.events.listening}

    # ---- helpers for the desktop app, which never imports engines ----

    def sniff(self, path: Path) -> str | None:
        """The format id of a local file, judged by content exactly as uploads are."""
        return sniff(path, path.name)

    def submit_local(self, paths: list[Path], tool_id: str, params: dict[str, Any] | None = None,
                     output_format: str | None = None) -> Job:
        """Queue a job for local files (the GUI's path): files are copied into the store first."""
        stored = [self.files.add(p, p.name, key_id=None, kind="upload", move=False) for p in paths]
        return self.jobs.create(Caller(), tool_id, [f.id for f in stored], params, output_format)

    def result_paths(self, job_id: str) -> list[tuple[str, Path]]:
        """(name, path in the store) of a DONE job's outputs."""
        result = self.jobs.result(job_id, Caller(any_owner=True))
        return [(f.original_name, self.files.path_of(f.id)) for f in result.files]

    # ---- models (the Engines panel's downloads) ----

    def models(self) -> list[dict[str, Any]]:
        """The downloadable models, and whether each is in the data dir's models/."""
        from converters.engines.modelfiles import REGISTRY, is_installed

        models_dir = self.settings.data_dir / "models"
        return [{"name": e.name, "title": e.title, "kind": e.kind, "sizeBytes": e.size, "verified": e.verified,
                 "installed": is_installed(e, models_dir)} for e in REGISTRY.values()]

    def download_model(self, name: str, progress: Callable[[float], None],
                       cancelled: Callable[[], bool]) -> None:
        """Fetch ``name`` from its official source (checksum-checked, resumable); blocking."""
        from converters.engines.modelfiles import download, get_entry

        try:
            download(get_entry(name), self.settings.data_dir / "models", progress, cancelled)
        finally:
            self.switches.refresh()  # tools waiting for this model may run now
            if self.registry is not None:
                self.registry.beat()

    def close(self) -> None:
        self.stop_workers()
        self.events.stop()
        if self.queue.bells is not None:
            self.queue.bells.close()
        self.db.close()
