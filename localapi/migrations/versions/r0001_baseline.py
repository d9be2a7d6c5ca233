"""The schema as FileKiln's first releases made it, table by table.

Revision ID: 0001_baseline
Revises:
Create Date: 2026-11-27

A new database gets every table. A data dir made before migrations (it has the tables but no
``alembic_version``) keeps its rows: only what it lacks is added, the columns and indexes later releases
brought, so it upgrades in place.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None

Text, Int, Big, Real = sa.Text, sa.Integer, sa.BigInteger, sa.Double  # Double: PostgreSQL's double precision


def col(name: str, kind: Any, *, null: bool = True, default: str | None = None,
        pk: bool = False) -> sa.Column[Any]:
    return sa.Column(name, kind(), nullable=null and not pk, server_default=default, primary_key=pk)


def tables(meta: sa.MetaData) -> None:
    sa.Table("keys", meta, col("id", Text, pk=True), col("name", Text, null=False), col("prefix", Text, null=False),
             col("secret_hash", Text, null=False), col("created_at", Real, null=False), col("last_used_at", Real),
             col("revoked_at", Real), col("daily_job_quota", Int), sa.UniqueConstraint("secret_hash"))
    files = sa.Table(
        "files", meta, col("id", Text, pk=True), col("key_id", Text), col("original_name", Text, null=False),
        col("mime_type", Text, null=False), col("format", Text), col("size_bytes", Big, null=False),
        col("sha256", Text), col("kind", Text, null=False), col("job_id", Text), col("created_at", Real, null=False),
        col("expires_at", Real, null=False), col("deleted_at", Real))
    sa.Index("files_expiry", files.c.expires_at, sqlite_where=files.c.deleted_at.is_(None),
             postgresql_where=files.c.deleted_at.is_(None))
    jobs = sa.Table(
        "jobs", meta, col("id", Text, pk=True), col("key_id", Text), col("tool", Text, null=False),
        col("status", Text, null=False), col("progress", Int, null=False, default="0"), col("output_format", Text),
        col("params", Text, null=False), col("input_file_ids", Text, null=False),
        col("result_file_ids", Text, null=False, default="[]"), col("bundle_file_id", Text), col("error_code", Text),
        col("error_message", Text), col("notes", Text, null=False, default="[]"), col("created_at", Real, null=False),
        col("started_at", Real), col("finished_at", Real), col("updated_at", Real, null=False),
        col("attempts", Int, null=False, default="0"), col("worker", Text), col("heartbeat_at", Real),
        col("child_pid", Int), col("webhook_url", Text), col("secret_params", Text), col("tag", Text),
        col("workflow_id", Text), col("step", Int))
    sa.Index("jobs_key_created", jobs.c.key_id, jobs.c.created_at, jobs.c.id)
    # GET /jobs?status=...: the newest jobs in one state without scanning the others
    sa.Index("jobs_key_status_created", jobs.c.key_id, jobs.c.status, jobs.c.created_at, jobs.c.id)
    sa.Index("jobs_status_created", jobs.c.status, jobs.c.created_at, jobs.c.id)
    # the worker's fair pick: each caller's running count and oldest queued job, from the index alone
    sa.Index("jobs_status_key_created", jobs.c.status, jobs.c.key_id, jobs.c.created_at, jobs.c.id)
    in_workflow = jobs.c.workflow_id.isnot(None)
    sa.Index("jobs_workflow", jobs.c.workflow_id, jobs.c.step, sqlite_where=in_workflow, postgresql_where=in_workflow)
    tagged = jobs.c.tag.isnot(None)
    sa.Index("jobs_key_tag_created", jobs.c.key_id, jobs.c.tag, jobs.c.created_at, jobs.c.id,
             sqlite_where=tagged, postgresql_where=tagged)
    sa.Table("usage", meta, col("key_id", Text, pk=True), col("day", Text, pk=True), col("jobs", Int, null=False))
    sa.Table("idempotency", meta, col("key_id", Text, pk=True), col("idem_key", Text, pk=True),
             col("request_hash", Text), col("state", Text, null=False), col("status_code", Int), col("body", Text),
             col("created_at", Real, null=False), col("owner", Text), col("heartbeat_at", Real))
    sa.Table("settings", meta, col("name", Text, pk=True), col("value", Text, null=False))
    # every change of a job, in order, with a snapshot of the job (localapi/core/jobs/events.py)
    events = sa.Table(
        "job_events", meta,
        sa.Column("seq", Big().with_variant(Int(), "sqlite"), primary_key=True, autoincrement=True),
        col("job_id", Text, null=False), col("key_id", Text), col("type", Text, null=False),
        col("job", Text, null=False), col("created_at", Real, null=False), sqlite_autoincrement=True)
    sa.Index("job_events_job", events.c.job_id, events.c.seq)
    sa.Index("job_events_key", events.c.key_id, events.c.seq)
    sa.Index("job_events_created", events.c.created_at)
    # webhooks (localapi/core/webhooks/): a key's hooks, its secret for jobs' own webhookUrl, and the delivery
    # outbox; (target, event_seq) is unique so that a feed read twice never delivers twice
    hooks = sa.Table(
        "webhooks", meta, col("id", Text, pk=True), col("key_id", Text, null=False), col("url", Text, null=False),
        col("events", Text, null=False), col("secret", Text, null=False), col("created_at", Real, null=False),
        col("disabled_at", Real), col("disabled_reason", Text))
    sa.Index("webhooks_key", hooks.c.key_id, hooks.c.created_at)
    sa.Table("webhook_job_secrets", meta, col("key_id", Text, pk=True), col("secret", Text, null=False),
             col("created_at", Real, null=False))
    deliveries = sa.Table(
        "webhook_deliveries", meta, col("id", Text, pk=True), col("target", Text, null=False),
        col("event_seq", Big, null=False), col("event_type", Text, null=False), col("job_id", Text, null=False),
        col("key_id", Text), col("url", Text, null=False), col("body", Text, null=False),
        col("status", Text, null=False), col("attempts", Int, null=False, default="0"),
        col("next_attempt_at", Real, null=False),
        col("last_status", Int), col("last_error", Text), col("created_at", Real, null=False),
        col("finished_at", Real), sa.UniqueConstraint("target", "event_seq"))
    sa.Index("webhook_deliveries_due", deliveries.c.status, deliveries.c.next_attempt_at)
    # workflows (localapi/core/workflows/): steps run as ordinary jobs, which name their workflow and step;
    # secret_steps holds the steps' passwords, sealed, until the workflow ends
    workflows = sa.Table(
        "workflows", meta, col("id", Text, pk=True), col("key_id", Text), col("status", Text, null=False),
        col("progress", Int, null=False, default="0"), col("steps", Text, null=False), col("secret_steps", Text),
        col("preset", Text), col("tag", Text), col("webhook_url", Text), col("input_file_ids", Text, null=False),
        col("current_step", Int, null=False, default="0"), col("result_file_ids", Text, null=False, default="[]"),
        col("bundle_file_id", Text), col("error_code", Text), col("error_message", Text), col("error_step", Int),
        col("created_at", Real, null=False), col("started_at", Real), col("finished_at", Real),
        col("updated_at", Real, null=False))
    sa.Index("workflows_key_created", workflows.c.key_id, workflows.c.created_at, workflows.c.id)
    sa.Index("workflows_status", workflows.c.status)
    # watch folders (localapi/core/watch/): stored so that they come back after a restart
    sa.Table("watch_folders", meta, col("id", Text, pk=True), col("in_dir", Text, null=False),
             col("out_dir", Text, null=False), col("preset", Text, null=False),
             col("recursive", Int, null=False, default="0"), col("after", Text, null=False, default="keep"),
             col("paused", Int, null=False, default="0"), col("created_at", Real, null=False),
             col("last_activity_at", Real), col("last_error", Text), sa.UniqueConstraint("in_dir", "out_dir"))
    # one row per version of a file taken from a watched folder (watch/ledger.py)
    watched = sa.Table(
        "watched_files", meta, sa.Column("id", Int(), primary_key=True, autoincrement=True),
        col("folder_id", Text, null=False), col("rel_path", Text, null=False), col("size", Big, null=False),
        col("mtime_ns", Big, null=False), col("sha256", Text, null=False), col("status", Text, null=False),
        col("workflow_id", Text), col("taken_at", Real, null=False), col("finished_at", Real), col("message", Text),
        sa.UniqueConstraint("folder_id", "rel_path", "size", "mtime_ns", "sha256"))
    sa.Index("watched_files_status", watched.c.folder_id, watched.c.status)
    # worker processes (localapi/core/jobs/registry.py): alive while heartbeat_at is recent; tools and partial are
    # JSON lists of the tool ids a process takes, and of those it runs only in part
    sa.Table("workers", meta, col("id", Text, pk=True), col("host", Text, null=False), col("pid", Int, null=False),
             col("slots", Int, null=False), col("started_at", Real, null=False),
             col("heartbeat_at", Real, null=False), col("tools", Text, null=False, default="[]"),
             col("partial", Text, null=False, default="[]"))
    # wake-up sockets of the processes on one host (localapi/core/bells.py): a UDP port on 127.0.0.1 each, and
    # the kinds of news it wants (queue, events), comma-separated
    sa.Table("bells", meta, col("id", Text, pk=True), col("host", Text, null=False), col("port", Int, null=False),
             col("kinds", Text, null=False), col("updated_at", Real, null=False))
    # presets: named lists of steps, shared by every face of one install (the built-in ones live in code)
    sa.Table("presets", meta, col("name", Text, pk=True), col("description", Text, null=False, default=""),
             col("steps", Text, null=False), col("created_at", Real, null=False), col("updated_at", Real, null=False))


def upgrade() -> None:
    bind = op.get_bind()
    meta = sa.MetaData()
    tables(meta)
    found = sa.inspect(bind)
    present = set(found.get_table_names())
    for table in meta.sorted_tables:
        if table.name not in present:
            table.create(bind)  # with its indexes
            continue
        have = {c["name"] for c in found.get_columns(table.name)}
        for column in table.columns:
            if column.name not in have:  # a column a later release added
                default = getattr(column.server_default, "arg", None)
                op.add_column(table.name, sa.Column(column.name, column.type, nullable=True, server_default=default))
        indexes = {i["name"] for i in found.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in indexes:
                index.create(bind)
    if "jobs" in present and "jobs_status" in {i["name"] for i in found.get_indexes("jobs")}:
        op.drop_index("jobs_status", table_name="jobs")  # replaced by jobs_status_created


def downgrade() -> None:
    meta = sa.MetaData()
    tables(meta)
    meta.drop_all(op.get_bind())
