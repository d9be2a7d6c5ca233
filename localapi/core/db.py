"""The metadata database: SQLite in WAL mode, one connection per thread."""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCHEMA = """
create table if not exists keys (
    id text primary key, name text not null, prefix text not null,
    secret_hash text not null unique, created_at real not null,
    last_used_at real, revoked_at real, daily_job_quota integer
);
create table if not exists files (
    id text primary key, key_id text, original_name text not null, mime_type text not null,
    format text, size_bytes integer not null, sha256 text, kind text not null,
    job_id text, created_at real not null, expires_at real not null, deleted_at real
);
create index if not exists files_expiry on files (expires_at) where deleted_at is null;
create table if not exists jobs (
    id text primary key, key_id text, tool text not null, status text not null,
    progress integer not null default 0, output_format text, params text not null,
    input_file_ids text not null, result_file_ids text not null default '[]',
    bundle_file_id text, error_code text, error_message text, notes text not null default '[]',
    created_at real not null, started_at real, finished_at real, updated_at real not null,
    attempts integer not null default 0, worker text, heartbeat_at real, child_pid integer,
    webhook_url text
);
create index if not exists jobs_key_created on jobs (key_id, created_at, id);
-- GET /jobs?status=...: the newest jobs in one state without scanning the others (10 000 queued, 1 failed)
create index if not exists jobs_key_status_created on jobs (key_id, status, created_at, id);
drop index if exists jobs_status;
create index if not exists jobs_status_created on jobs (status, created_at, id);
-- the worker's fair pick: each caller's running count and oldest queued job, from the index alone
create index if not exists jobs_status_key_created on jobs (status, key_id, created_at, id);
create table if not exists usage (
    key_id text not null, day text not null, jobs integer not null,
    primary key (key_id, day)
);
create table if not exists idempotency (
    key_id text not null, idem_key text not null, request_hash text,
    state text not null, status_code integer, body text, created_at real not null,
    owner text, heartbeat_at real,
    primary key (key_id, idem_key)
);
create table if not exists settings (name text primary key, value text not null);
-- every change of a job, in order, with a snapshot of the job (localapi/core/jobs/events.py)
create table if not exists job_events (
    seq integer primary key autoincrement, job_id text not null, key_id text, type text not null,
    job text not null, created_at real not null
);
create index if not exists job_events_job on job_events (job_id, seq);
create index if not exists job_events_key on job_events (key_id, seq);
create index if not exists job_events_created on job_events (created_at);
-- webhooks (localapi/core/webhooks/): a key's hooks, its secret for jobs' own webhookUrl, and the
-- delivery outbox; (target, event_seq) is unique so that a feed read twice never delivers twice
create table if not exists webhooks (
    id text primary key, key_id text not null, url text not null, events text not null, secret text not null,
    created_at real not null, disabled_at real, disabled_reason text
);
create index if not exists webhooks_key on webhooks (key_id, created_at);
create table if not exists webhook_job_secrets (
    key_id text primary key, secret text not null, created_at real not null
);
create table if not exists webhook_deliveries (
    id text primary key, target text not null, event_seq integer not null, event_type text not null,
    job_id text not null, key_id text, url text not null, body text not null, status text not null,
    attempts integer not null default 0, next_attempt_at real not null, last_status integer, last_error text,
    created_at real not null, finished_at real,
    unique (target, event_seq)
);
create index if not exists webhook_deliveries_due on webhook_deliveries (status, next_attempt_at);
-- workflows (localapi/core/workflows/): steps run as ordinary jobs, which name their workflow and step;
-- secret_steps holds the steps' passwords, sealed, until the workflow ends
create table if not exists workflows (
    id text primary key, key_id text, status text not null, progress integer not null default 0,
    steps text not null, secret_steps text, preset text, tag text, webhook_url text,
    input_file_ids text not null, current_step integer not null default 0,
    result_file_ids text not null default '[]', bundle_file_id text,
    error_code text, error_message text, error_step integer,
    created_at real not null, started_at real, finished_at real, updated_at real not null
);
create index if not exists workflows_key_created on workflows (key_id, created_at, id);
create index if not exists workflows_status on workflows (status);
-- watch folders (localapi/core/watch/): stored so that they come back after a restart
create table if not exists watch_folders (
    id text primary key, in_dir text not null, out_dir text not null, preset text not null,
    recursive integer not null default 0, after text not null default 'keep', paused integer not null default 0,
    created_at real not null, last_activity_at real, last_error text,
    unique (in_dir, out_dir)
);
-- one row per version of a file taken from a watched folder (watch/ledger.py)
create table if not exists watched_files (
    id integer primary key, folder_id text not null, rel_path text not null, size integer not null,
    mtime_ns integer not null, sha256 text not null, status text not null, workflow_id text,
    taken_at real not null, finished_at real, message text,
    unique (folder_id, rel_path, size, mtime_ns, sha256)
);
create index if not exists watched_files_status on watched_files (folder_id, status);
-- worker processes (localapi/core/jobs/registry.py): alive while heartbeat_at is recent; tools and partial
-- are JSON lists of the tool ids a process takes, and of those it runs only in part
create table if not exists workers (
    id text primary key, host text not null, pid integer not null, slots integer not null,
    started_at real not null, heartbeat_at real not null, tools text not null default '[]',
    partial text not null default '[]'
);
-- wake-up sockets of the processes on a data dir (localapi/core/bells.py): a UDP port on 127.0.0.1 each, and
-- the kinds of news it wants (queue, events), comma-separated
create table if not exists bells (
    id text primary key, host text not null, port integer not null, kinds text not null, updated_at real not null
);
-- presets: named lists of steps, shared by every face of one install (the built-in ones live in code)
create table if not exists presets (
    name text primary key, description text not null default '', steps text not null,
    created_at real not null, updated_at real not null
);
"""

# indexes on columns added since a table was first released (made after COLUMNS_ADDED)
LATE_INDEXES = """
create index if not exists jobs_workflow on jobs (workflow_id, step) where workflow_id is not null;
create index if not exists jobs_key_tag_created on jobs (key_id, tag, created_at, id) where tag is not null;
"""


# columns added since a table was first released: a data dir made by an earlier FileKiln gains them at start
COLUMNS_ADDED = (
    ("jobs", "webhook_url", "text"),
    ("jobs", "secret_params", "text"),  # sealed passwords, until the job ends (jobs/sealed.py)
    ("idempotency", "owner", "text"),  # the process holding an in-flight claim, and its last sign of life
    ("idempotency", "heartbeat_at", "real"),
    ("jobs", "tag", "text"),  # the caller's label, for GET /jobs?tag=
    ("jobs", "workflow_id", "text"),  # the workflow this job is a step of, and which step (0-based)
    ("jobs", "step", "integer"),
)


def new_id(prefix: str) -> str:
    """``prefix_`` + 128 random bits, URL-safe."""
    return f"{prefix}_{uuid.UUID(bytes=secrets.token_bytes(16)).hex}"


def now() -> float:
    return time.time()


class Database:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        # SQLite lets one writer in at a time and makes the others sleep and retry (1, 2, 5 ms ...);
        # this process's writers queue here instead and go in the moment the one before is done.
        # Re-entrant: a write inside a transaction on the same thread is part of that transaction.
        self._writing = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = self.connect()
        conn.executescript(SCHEMA)
        for table, column, declaration in COLUMNS_ADDED:
            if column not in {row["name"] for row in conn.execute(f"pragma table_info({table})")}:
                conn.execute(f"alter table {table} add column {column} {declaration}")
        conn.executescript(LATE_INDEXES)

    def connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("pragma journal_mode=wal")
            conn.execute("pragma synchronous=normal")
            conn.execute("pragma busy_timeout=30000")
            conn.execute("pragma foreign_keys=on")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locking) transaction."""
        conn = self.connect()
        with self._writing:
            conn.execute("begin immediate")
            try:
                yield conn
            except BaseException:
                conn.execute("rollback")
                raise
            conn.execute("commit")

    def one(self, sql: str, *args: Any) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.connect().execute(sql, args).fetchone()
        return row

    def all(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        return list(self.connect().execute(sql, args).fetchall())

    def execute(self, sql: str, *args: Any) -> int:
        """One writing statement, committed on its own (or part of this thread's open transaction)."""
        with self._writing:
            return self.connect().execute(sql, args).rowcount

    def get_setting(self, name: str, default: str | None = None) -> str | None:
        row = self.one("select value from settings where name = ?", name)
        return row["value"] if row else default

    def set_setting(self, name: str, value: str) -> None:
        self.execute(
            "insert into settings (name, value) values (?, ?) "
            "on conflict (name) do update set value = excluded.value",
            name, value,
        )

    def setting_once(self, name: str, make: str) -> str:
        """Store ``make`` under ``name`` unless a value is there already; return the stored one."""
        self.execute("insert or ignore into settings (name, value) values (?, ?)", name, make)
        value = self.get_setting(name)
        assert value is not None
        return value

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
