"""A key's hooks and its job secret, the delivery rows' states, and how a delivery is signed."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from localapi.core.db import Database, new_id, now
from localapi.core.errors import Conflict, InvalidParams, NotFound
from localapi.core.jobs.events import EventFeed
from localapi.core.jobs.records import Job
from localapi.core.webhooks.targets import TargetPolicy, TargetRefused
from localapi.core.workflows.records import Workflow

if TYPE_CHECKING:
    from localapi.core.webhooks.dispatch import Dispatcher

log = logging.getLogger("filekiln.webhooks")

# what a hook may subscribe to
EVENTS = ("job.created", "job.done", "job.failed", "job.canceled", "workflow.done", "workflow.failed",
          "workflow.canceled")
FEED_POSITION = "webhook_feed_seq"  # the last job_events.seq turned into deliveries
JOB_TARGET = "job:"  # the target of a job's own webhookUrl is "job:<job id>"; a hook's is its id
MAX_URL = 2048
LEASE_MARGIN = 30.0  # seconds past the timeout before another sender may take an attempt over
KEEP_FINISHED = 7 * 86400.0  # delivered and abandoned rows are kept this long, for inquiries

RenderJob = Callable[[Job | Workflow], dict[str, Any]]  # a job or a workflow as the API shows it


MAX_HOOKS_PER_KEY = 20


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # due at next_attempt_at
    DELIVERED = "delivered"  # the target answered 2xx
    FAILED = "failed"  # every attempt of the schedule failed
    DROPPED = "dropped"  # the hook was deleted or disabled (410) before it was delivered


@dataclass(frozen=True)
class Webhook:
    id: str
    key_id: str
    url: str
    events: tuple[str, ...]
    created_at: float
    disabled_at: float | None
    disabled_reason: str | None


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``FileKiln-Signature`` value: ``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``.

    The HMAC key is the secret exactly as shown (``whsec_…``) in UTF-8."""
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def iso(ts: float) -> str:
    """A time as the API writes it (pydantic's JSON: UTC with a ``Z``)."""
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


class Webhooks:
    """A key's hooks and its job secret; :meth:`start` runs the deliveries in this process."""

    def __init__(self, db: Database, feed: EventFeed, allowed_hosts: Sequence[str], timeout: float,
                 retry_seconds: Sequence[float]) -> None:
        self.db = db
        self.feed = feed
        self.policy = TargetPolicy(allowed_hosts)
        self.timeout = timeout
        self.retry_seconds = tuple(retry_seconds)
        self.dispatcher: Dispatcher | None = None

    # ---- hooks ----

    def check_url(self, url: str | None, field: str = "url") -> str | None:
        """``url`` when webhooks may reach it; a 422 naming ``field`` otherwise."""
        if url is None:
            return None
        try:
            if len(url) > MAX_URL:
                raise TargetRefused(f"longer than {MAX_URL} characters")
            return self.policy.check_url(url)
        except TargetRefused as exc:
            raise InvalidParams(f"Webhooks cannot be sent to this URL: {exc}.", code="webhook_target_not_allowed",
                                errors={field: [str(exc)]}) from None

    def create(self, key_id: str, url: str, events: Sequence[str]) -> tuple[Webhook, str]:
        """A hook for ``key_id``'s jobs; the secret is returned here and never again."""
        self.check_url(url)
        held = self.db.one("select count(*) from webhooks where key_id = ?", key_id)[0]
        if held >= MAX_HOOKS_PER_KEY:  # each job's every event goes to each hook: hooks multiply deliveries
            raise Conflict(f"This key has {held} webhooks, as many as a key may have; delete one first.",
                           code="too_many_webhooks")
        chosen = tuple(e for e in EVENTS if e in set(events))
        if not chosen or len(chosen) != len(set(events)):
            raise InvalidParams("Unknown webhook event.", errors={"events": [f"each one of {', '.join(EVENTS)}"]})
        hook_id, secret = new_id("wh"), new_secret()
        self.db.execute("insert into webhooks (id, key_id, url, events, secret, created_at) values (?, ?, ?, ?, ?, ?)",
                        hook_id, key_id, url, json.dumps(chosen), secret, now())
        if self.dispatcher is not None:
            self.dispatcher.hooked(key_id)
        return self.get(key_id, hook_id), secret

    def get(self, key_id: str, hook_id: str) -> Webhook:
        row = self.db.one("select * from webhooks where id = ? and key_id = ?", hook_id, key_id)
        if row is None:
            raise NotFound("No such webhook for this key.", code="webhook_not_found")
        return _hook(row)

    def list(self, key_id: str) -> list[Webhook]:
        return [_hook(r) for r in self.db.all("select * from webhooks where key_id = ? order by created_at, id",
                                              key_id)]

    def delete(self, key_id: str, hook_id: str) -> None:
        """Delete a hook; what it had not delivered yet is dropped."""
        with self.db.transaction() as conn:
            if not conn.execute("delete from webhooks where id = ? and key_id = ?", (hook_id, key_id)).rowcount:
                raise NotFound("No such webhook for this key.", code="webhook_not_found")
            drop_pending(conn, hook_id)

    # ---- the job secret: signs deliveries to jobs' own webhookUrl ----

    def job_secret(self, key_id: str) -> tuple[str, float]:
        """``key_id``'s job secret and when it was made; made on first use."""
        self.db.execute("insert into webhook_job_secrets (key_id, secret, created_at) values (?, ?, ?)"
                        " on conflict do nothing", key_id, new_secret(), now())
        row = self.db.one("select secret, created_at from webhook_job_secrets where key_id = ?", key_id)
        assert row is not None
        return row["secret"], row["created_at"]

    def rotate_job_secret(self, key_id: str) -> tuple[str, float]:
        """A new job secret for ``key_id``; deliveries still pending are signed with it too."""
        secret, t = new_secret(), now()
        self.db.execute("insert into webhook_job_secrets (key_id, secret, created_at) values (?, ?, ?) "
                        "on conflict (key_id) do update set secret = excluded.secret, created_at = excluded.created_at",
                        key_id, secret, t)
        return secret, t

    # ---- running ----

    def start(self, render: RenderJob, senders: int = 4) -> None:
        """Deliver in this process: ``render`` turns a job into its API JSON (the HTTP face's ``JobOut``)."""
        if self.dispatcher is None:
            from localapi.core.webhooks.dispatch import Dispatcher  # it uses this module

            self.dispatcher = Dispatcher(self, render, senders)
            self.dispatcher.start()

    def stop(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.stop()
            self.dispatcher = None


def _hook(row: Any) -> Webhook:
    return Webhook(id=row["id"], key_id=row["key_id"], url=row["url"], events=tuple(json.loads(row["events"])),
                   created_at=row["created_at"], disabled_at=row["disabled_at"],
                   disabled_reason=row["disabled_reason"])


def drop_pending(conn: Any, target: str) -> None:
    conn.execute("update webhook_deliveries set status = ?, finished_at = ? where target = ? and status = ?",
                 (DeliveryStatus.DROPPED, now(), target, DeliveryStatus.PENDING))


