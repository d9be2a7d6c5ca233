"""Webhooks: a key's hooks, the targets they may reach, and an outbox that delivers job events at least once.

Two kinds of target receive a job's ``job.created``, ``job.done``, ``job.failed`` and ``job.canceled``:
a key's hooks (``POST /webhooks``, each with its own secret, for every job of that key) and a job's
own ``webhookUrl`` (signed with the key's *job secret*, ``GET /webhooks/job-secret``).

The path of an event:

1. the job change records a row in ``job_events`` (:mod:`localapi.core.jobs.events`);
2. the :class:`Dispatcher` reads the feed from the position it keeps in ``settings``
   (``webhook_feed_seq``) and, in one transaction, inserts a row per target into
   ``webhook_deliveries`` (``insert or ignore`` on ``(target, event_seq)``: a feed read twice
   after a crash makes no second delivery) and moves the position on;
3. sender threads claim due rows (a lease, so two servers never send the same attempt at once),
   POST them, and record the outcome: 2xx delivered; ``410`` disables the target; anything else
   (a redirect, which is never followed, another status, a refused connection, a timeout) is
   tried again on ``webhook_retry_seconds``.

Whatever the server was doing when it died, the rows are still there at the next start: an
event is delivered at least once, with the same ``FileKiln-Event-Id`` on every attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import httpx

from localapi import __version__
from localapi.core.db import Database, new_id, now
from localapi.core.errors import InvalidParams, NotFound
from localapi.core.jobs.events import EventFeed, JobEvent
from localapi.core.jobs.records import Job

log = logging.getLogger("filekiln.webhooks")

EVENTS = ("job.created", "job.done", "job.failed", "job.canceled")  # what a hook may subscribe to
FEED_POSITION = "webhook_feed_seq"  # the last job_events.seq turned into deliveries
JOB_TARGET = "job:"  # the target of a job's own webhookUrl is "job:<job id>"; a hook's is its id
MAX_URL = 2048
LEASE_MARGIN = 30.0  # seconds past the timeout before another sender may take an attempt over
KEEP_FINISHED = 7 * 86400.0  # delivered and abandoned rows are kept this long, for inquiries

RenderJob = Callable[[Job], dict[str, Any]]


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


class TargetRefused(Exception):
    """The URL's host is not one webhooks may reach (see :class:`TargetPolicy`)."""


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


class TargetPolicy:
    """Where deliveries may go: loopback, and the hosts listed in ``webhook_allowed_hosts``.

    A key must not be able to make FileKiln probe the network it sits in. A URL is checked as
    written when a hook or job is made, and again at each attempt after resolving its host: every
    address must be loopback or inside a listed IP or network, unless the name itself is listed.
    The connection then goes to the address that was checked, so a DNS answer that changes in
    between (rebinding) cannot redirect it.
    """

    def __init__(self, allowed_hosts: Iterable[str]) -> None:
        self.names: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in allowed_hosts:
            entry = entry.strip().strip("[]").lower()
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.names.add(entry.rstrip("."))

    def address_allowed(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        return ip.is_loopback or any(ip in net for net in self.networks)

    def check_url(self, url: str) -> str:
        """``url`` if a hook may target it as written; otherwise :class:`TargetRefused`."""
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        if parts.scheme not in ("http", "https") or not host:
            raise TargetRefused("must be an http:// or https:// URL with a host")
        if host == "localhost" or host in self.names:
            return url
        try:
            if self.address_allowed(host):
                return url
        except ValueError:  # a name nobody listed
            pass
        raise TargetRefused(f"{host} is not loopback and not in webhook_allowed_hosts")

    def resolve(self, url: str) -> str:
        """The address to connect to for ``url``, checked as the class docstring says."""
        self.check_url(url)
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise TargetRefused(f"{host} does not resolve: {exc}") from None
        addresses = [str(info[4][0]) for info in infos]
        if not addresses:
            raise TargetRefused(f"{host} does not resolve")
        if host not in self.names:
            outside = [a for a in addresses if not self.address_allowed(a)]
            if outside:
                raise TargetRefused(f"{host} resolves to {outside[0]}, outside loopback and webhook_allowed_hosts")
        return addresses[0]


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
        chosen = tuple(e for e in EVENTS if e in set(events))
        if not chosen or len(chosen) != len(set(events)):
            raise InvalidParams("Unknown webhook event.", errors={"events": [f"each one of {', '.join(EVENTS)}"]})
        hook_id, secret = new_id("wh"), new_secret()
        self.db.execute("insert into webhooks (id, key_id, url, events, secret, created_at) values (?, ?, ?, ?, ?, ?)",
                        hook_id, key_id, url, json.dumps(chosen), secret, now())
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
            _drop_pending(conn, hook_id)

    # ---- the job secret: signs deliveries to jobs' own webhookUrl ----

    def job_secret(self, key_id: str) -> tuple[str, float]:
        """``key_id``'s job secret and when it was made; made on first use."""
        self.db.execute("insert or ignore into webhook_job_secrets (key_id, secret, created_at) values (?, ?, ?)",
                        key_id, new_secret(), now())
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


def _drop_pending(conn: Any, target: str) -> None:
    conn.execute("update webhook_deliveries set status = ?, finished_at = ? where target = ? and status = ?",
                 (DeliveryStatus.DROPPED, now(), target, DeliveryStatus.PENDING))


class Dispatcher:
    """Turns feed events into outbox rows and sends the due rows, on threads of its own.

    One thread collects and schedules; ``senders`` threads each send one delivery at a time, so
    a target that hangs until the timeout holds up only its own deliveries.
    """

    def __init__(self, hooks: Webhooks, render: RenderJob, senders: int = 4) -> None:
        self.hooks = hooks
        self.db = hooks.db
        self.render = render
        self.senders = senders
        self.user_agent = f"FileKiln/{__version__}"
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._work: queue.Queue[str | None] = queue.Queue()
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._last_sweep = 0.0

    def start(self) -> None:
        # the first start on a data dir begins at the feed's end: no hook or webhookUrl existed before
        self.db.setting_once(FEED_POSITION, str(self.hooks.feed.last_seq))
        self.hooks.feed.on_event(lambda event: self._wake.set())
        self._threads = [threading.Thread(target=self._run, name="filekiln-webhooks", daemon=True)]
        self._threads += [threading.Thread(target=self._send_loop, name=f"filekiln-webhook-{n}", daemon=True)
                          for n in range(self.senders)]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop; a send under way is cut off and, its lease run out, tried again at the next start."""
        self._stopping.set()
        self._wake.set()
        for _ in range(self.senders):
            self._work.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads = []

    # ---- the scheduling thread ----

    def _run(self) -> None:
        while not self._stopping.is_set():
            wait = 1.0
            try:
                self.collect()
                wait = self.schedule()
                self._sweep()
            except Exception:
                log.exception("webhook dispatch failed")
            self._wake.wait(wait)
            self._wake.clear()

    def collect(self) -> int:
        """Turn the events recorded since the stored position into deliveries; returns how many events."""
        seen = 0
        while True:
            position = int(self.db.get_setting(FEED_POSITION) or 0)
            events = self.hooks.feed.since(position)
            if not events:
                return seen
            with self.db.transaction() as conn:
                for event in events:
                    if event.type in EVENTS:
                        for target, url in self._targets(conn, event):
                            self._insert(conn, target, url, event)
                conn.execute("update settings set value = ? where name = ?", (str(events[-1].seq), FEED_POSITION))
            seen += len(events)

    def _targets(self, conn: Any, event: JobEvent) -> list[tuple[str, str]]:
        job = event.job
        if job.key_id is None:  # the desktop's and the CLI's own jobs have no key, so no hooks
            return []
        rows = conn.execute(
            "select w.id, w.url, w.events from webhooks w join keys k on k.id = w.key_id where w.key_id = ?"
            " and w.disabled_at is null and k.revoked_at is null and w.created_at <= ?",
            (job.key_id, event.created_at)).fetchall()
        targets = [(r["id"], r["url"]) for r in rows if event.type in json.loads(r["events"])]
        if job.webhook_url:
            targets.append((JOB_TARGET + job.id, job.webhook_url))
        return targets

    def _insert(self, conn: Any, target: str, url: str, event: JobEvent) -> None:
        body = json.dumps({"event": event.type, "job": self.render(event.job), "createdAt": iso(event.created_at)},
                          separators=(",", ":"))
        t = now()
        conn.execute(
            "insert or ignore into webhook_deliveries (id, target, event_seq, event_type, job_id, key_id, url, body,"
            " status, next_attempt_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new_id("evt"), target, event.seq, event.type, event.job.id, event.job.key_id, url, body,
             DeliveryStatus.PENDING, t, t))

    def schedule(self) -> float:
        """Hand due deliveries to idle senders; returns how long until the next one is due (at most 1 s)."""
        with self._busy_lock:
            idle = self.senders - self._busy
        t = now()
        lease = t + self.hooks.timeout + LEASE_MARGIN
        if idle > 0:
            for row in self.db.all("select id, next_attempt_at from webhook_deliveries where status = ?"
                                   " and next_attempt_at <= ? order by next_attempt_at limit ?",
                                   DeliveryStatus.PENDING, t, idle):
                # the lease: another server on this data dir (or this one after a crash) waits for it to pass
                if self.db.execute("update webhook_deliveries set next_attempt_at = ? where id = ? and status = ?"
                                   " and next_attempt_at = ?", lease, row["id"], DeliveryStatus.PENDING,
                                   row["next_attempt_at"]):
                    with self._busy_lock:
                        self._busy += 1
                    self._work.put(row["id"])
        next_due = self.db.one("select min(next_attempt_at) as due from webhook_deliveries where status = ?",
                               DeliveryStatus.PENDING)
        due = next_due["due"] if next_due is not None else None
        return 1.0 if due is None else min(1.0, max(0.01, due - now()))

    def _sweep(self) -> None:
        if time.monotonic() - self._last_sweep >= 3600:
            self._last_sweep = time.monotonic()
            self.db.execute("delete from webhook_deliveries where status != ? and created_at < ?",
                            DeliveryStatus.PENDING, now() - KEEP_FINISHED)

    # ---- the sender threads ----

    def _send_loop(self) -> None:
        while True:
            delivery_id = self._work.get()
            if delivery_id is None:
                return
            try:
                self.send(delivery_id)
            except Exception:
                log.exception("webhook delivery %s failed", delivery_id)
            finally:
                with self._busy_lock:
                    self._busy -= 1
                self._wake.set()

    def secret_for(self, target: str, key_id: str | None) -> str | None:
        """The secret that signs deliveries to ``target``; None when it takes no more deliveries."""
        if target.startswith(JOB_TARGET):
            return self.hooks.job_secret(key_id)[0] if key_id is not None else None
        row = self.db.one("select secret from webhooks where id = ? and disabled_at is null", target)
        return row["secret"] if row is not None else None

    def send(self, delivery_id: str) -> None:
        """One attempt of one claimed delivery, and its outcome recorded."""
        row = self.db.one("select * from webhook_deliveries where id = ?", delivery_id)
        if row is None or row["status"] != DeliveryStatus.PENDING:
            return
        secret = self.secret_for(row["target"], row["key_id"])
        if secret is None:
            self._finish(delivery_id, DeliveryStatus.DROPPED, None, "the webhook was deleted or disabled")
            return
        body = row["body"].encode("utf-8")
        try:
            status = self._post(row["url"], body, delivery_id, secret)
        except TargetRefused as exc:
            self._retry(row, None, f"refused: {exc}")
            return
        except httpx.TimeoutException:
            self._retry(row, None, f"no answer within {self.hooks.timeout:g} s")
            return
        except httpx.HTTPError as exc:
            self._retry(row, None, f"{type(exc).__name__}: {exc}"[:500])
            return
        if 200 <= status < 300:
            self._finish(delivery_id, DeliveryStatus.DELIVERED, status, None, attempted=True)
        elif status == 410:
            self._gone(row)
        else:
            self._retry(row, status, f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400
                                                         else ""))

    def _post(self, url: str, body: bytes, delivery_id: str, secret: str) -> int:
        address = self.hooks.policy.resolve(url)
        target = httpx.URL(url)
        headers = {"Host": target.netloc.decode("ascii"), "Content-Type": "application/json",
                   "User-Agent": self.user_agent, "FileKiln-Event-Id": delivery_id,
                   "FileKiln-Signature": signature(secret, int(time.time()), body)}
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        # trust_env=False: a proxy from the environment would reach the target by a path not checked here
        with httpx.Client(timeout=self.hooks.timeout, follow_redirects=False, trust_env=False) as client:
            response = client.post(target.copy_with(host=address), content=body, headers=headers,
                                   extensions=extensions)
        return response.status_code

    def _finish(self, delivery_id: str, status: DeliveryStatus, http_status: int | None, error: str | None,
                attempted: bool = False) -> None:
        self.db.execute("update webhook_deliveries set status = ?, attempts = attempts + ?, last_status = ?,"
                        " last_error = ?, finished_at = ? where id = ?",
                        status, int(attempted), http_status, error, now(), delivery_id)

    def _retry(self, row: Any, http_status: int | None, error: str) -> None:
        attempts = row["attempts"] + 1
        schedule = self.hooks.retry_seconds
        log.info("webhook delivery %s to %s failed (attempt %d): %s", row["id"], row["url"], attempts, error)
        if attempts > len(schedule):
            self._finish(row["id"], DeliveryStatus.FAILED, http_status, error, attempted=True)
            return
        self.db.execute("update webhook_deliveries set attempts = ?, last_status = ?, last_error = ?,"
                        " next_attempt_at = ? where id = ?",
                        attempts, http_status, error, now() + schedule[attempts - 1], row["id"])

    def _gone(self, row: Any) -> None:
        """410: the target wants nothing more. A hook is disabled; a job's webhookUrl gets nothing more of it."""
        log.info("webhook target %s answered 410: disabled", row["url"])
        with self.db.transaction() as conn:
            conn.execute("update webhook_deliveries set status = ?, attempts = attempts + 1, last_status = 410,"
                         " finished_at = ? where id = ?", (DeliveryStatus.DROPPED, now(), row["id"]))
            conn.execute("update webhooks set disabled_at = ?, disabled_reason = ? where id = ?"
                         " and disabled_at is null", (now(), "the target answered 410 Gone", row["target"]))
            _drop_pending(conn, row["target"])
