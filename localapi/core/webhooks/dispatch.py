"""The outbox's two halves: feed events turned into delivery rows, and sender threads that post them."""

from __future__ import annotations

import collections
import json
import logging
import queue
import threading
import time
from typing import Any

from localapi import __version__
from localapi.core.db import new_id, now
from localapi.core.jobs.events import JobEvent
from localapi.core.webhooks.hooks import (
    EVENTS,
    FEED_POSITION,
    JOB_TARGET,
    KEEP_FINISHED,
    LEASE_MARGIN,
    DeliveryStatus,
    RenderJob,
    Webhooks,
    drop_pending,
    iso,
    signature,
)
from localapi.core.webhooks.targets import TargetRefused, shown

log = logging.getLogger("filekiln.webhooks")

POSITION_WRITE_SECONDS = 5.0


class _DeadlinePassed(Exception):
    """An attempt ran past its total deadline."""


class Dispatcher:
    """Turns feed events into outbox rows and sends the due rows, on threads of its own.

    One thread collects and schedules; ``senders`` threads each send one delivery at a time, so
    a target that hangs until the timeout holds up only its own deliveries. An attempt has a total
    deadline (``webhook_timeout_seconds``), however slowly a target trickles its answer, and one key's
    deliveries hold at most half the senders at once, so a key whose targets are slow (or who made many
    hooks) cannot hold up another key's.
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
        self._key_of: dict[str, str | None] = {}  # the deliveries being sent, and the key each is for
        self.per_key = max(1, senders // 2)  # senders one key's deliveries may hold at once
        self._threads: list[threading.Thread] = []
        self._last_sweep = 0.0
        self._position = 0  # the last feed event collected
        self._stored = 0.0  # when the position was last written to the database
        # the feed's events as it hands them over, so that the live ones are not read back from the database
        self._arrived: collections.deque[JobEvent] = collections.deque()
        self._reschedule = threading.Event()  # a delivery was added or a sender came free: look for due ones
        self._hooked: set[str] = set()  # the keys with a hook, at the last collect (see _arrive)
        self._tls: Any = None  # one SSL context for every delivery: building one parses the CA bundle (~50 ms)
        self._tls_lock = threading.Lock()

    def start(self) -> None:
        # the first start on a data dir begins at the feed's end: no hook or webhookUrl existed before
        self._position = int(self.db.setting_once(FEED_POSITION, str(self.hooks.feed.last_seq)))
        self.hooks.feed.on_event(self._arrive)
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
        self._store_position()

    # ---- the scheduling thread ----

    def _arrive(self, event: JobEvent) -> None:
        """Called with each event as the feed delivers it. Only one that may be delivered wakes the thread
        now; the others (progress, a key without hooks) only move the position, at its next wake (within a
        second), so most of a job's events cost no thread switch."""
        self._arrived.append(event)
        if event.type in EVENTS and (event.subject.webhook_url or event.key_id in self._hooked):
            self._wake.set()

    def hooked(self, key_id: str) -> None:
        """``key_id`` has a new hook: its events wake the thread from now on."""
        self._hooked.add(key_id)

    def _run(self) -> None:
        next_schedule = 0.0
        while not self._stopping.is_set():
            wait = 1.0
            try:
                self.collect()
                # the outbox is read when a delivery was added, a sender came free, or the next one is due
                # (at least every second: another process on this data dir may have left one behind)
                if self._reschedule.is_set() or time.monotonic() >= next_schedule:
                    self._reschedule.clear()
                    wait = self.schedule()
                    next_schedule = time.monotonic() + wait
                else:
                    wait = next_schedule - time.monotonic()
                self._sweep()
            except Exception:
                log.exception("webhook dispatch failed")
            self._wake.wait(max(wait, 0.0))
            self._wake.clear()

    def _next_events(self) -> list[JobEvent]:
        """The events after the position: those the feed handed over, read from the database only to
        catch up (after a start, or a gap before the first handed-over one)."""
        arrived: list[JobEvent] = []
        while self._arrived:
            event = self._arrived.popleft()
            if event.seq > self._position:
                arrived.append(event)
        if arrived and arrived[0].seq == self._position + 1:
            return arrived
        self._arrived.extendleft(reversed(arrived))  # after what the database gives, not lost
        return self.hooks.feed.since(self._position)

    def collect(self) -> int:
        """Turn the events recorded since the last position into deliveries; returns how many events.

        Most events have no target (progress, or a key without hooks): those only move the position,
        which is written with the deliveries it produced, else at most every few seconds. A restart
        may see a few events again; a delivery is one row per target and event, so none is doubled.
        """
        seen = 0
        while True:
            events = self._next_events()
            if not events:
                if seen:
                    self._store_position(lazily=True)
                return seen
            with self.db.reading() as conn:
                self._hooked = hooked = self._hooked_keys(conn)
                found = [(event, target, url) for event in events if event.type in EVENTS
                         for target, url in self._targets(conn, event, hooked)]
            self._position = events[-1].seq
            if found:
                with self.db.transaction() as conn:
                    for event, target, url in found:
                        self._insert(conn, target, url, event)
                    self._write_position(conn)
                self._reschedule.set()
            seen += len(events)

    def _store_position(self, lazily: bool = False) -> None:
        if not lazily or time.monotonic() - self._stored >= POSITION_WRITE_SECONDS:
            with self.db.transaction() as conn:
                self._write_position(conn)

    def _write_position(self, conn: Any) -> None:
        conn.execute("update settings set value = ? where name = ? and cast(value as integer) < ?",
                     (str(self._position), FEED_POSITION, self._position))
        self._stored = time.monotonic()

    @staticmethod
    def _hooked_keys(conn: Any) -> set[str]:
        """The keys with a hook that takes deliveries: one read a batch, so a key without hooks costs no more."""
        return {r[0] for r in conn.execute("select distinct key_id from webhooks where disabled_at is null")}

    def _targets(self, conn: Any, event: JobEvent, hooked: set[str]) -> list[tuple[str, str]]:
        job = event.subject  # a job, or a workflow (workflow.* events)
        if job.key_id is None:  # the desktop's and the CLI's own jobs have no key, so no hooks
            return []
        if job.key_id not in hooked:
            return [(JOB_TARGET + job.id, job.webhook_url)] if job.webhook_url else []
        rows = conn.execute(
            "select w.id, w.url, w.events from webhooks w join keys k on k.id = w.key_id where w.key_id = ?"
            " and w.disabled_at is null and k.revoked_at is null and w.created_at <= ?",
            (job.key_id, event.created_at)).fetchall()
        targets = [(r["id"], r["url"]) for r in rows if event.type in json.loads(r["events"])]
        if job.webhook_url:
            targets.append((JOB_TARGET + job.id, job.webhook_url))
        return targets

    def _insert(self, conn: Any, target: str, url: str, event: JobEvent) -> None:
        noun = "workflow" if event.workflow is not None else "job"
        body = json.dumps({"event": event.type, noun: self.render(event.subject), "createdAt": iso(event.created_at)},
                          separators=(",", ":"))
        t = now()
        conn.execute(
            "insert into webhook_deliveries (id, target, event_seq, event_type, job_id, key_id, url, body, status,"
            " next_attempt_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing",
            (new_id("evt"), target, event.seq, event.type, event.subject_id, event.key_id, url, body,
             DeliveryStatus.PENDING, t, t))

    def schedule(self) -> float:
        """Hand due deliveries to idle senders; returns how long until the next one is due (at most 1 s)."""
        with self._busy_lock:
            idle = self.senders - self._busy
        t = now()
        lease = t + self.hooks.timeout + LEASE_MARGIN
        if idle > 0:
            with self._busy_lock:
                sending = collections.Counter(self._key_of.values())
            # the oldest due first, but no key past its share of the senders: the keys at their share are
            # left out of the read, so a key with a long backlog does not hide another key's deliveries
            for _ in range(idle + 1):
                capped = sorted(k for k, n in sending.items() if n >= self.per_key and k is not None)
                others = f" and key_id not in ({', '.join('?' * len(capped))})" if capped else ""
                rows = self.db.all("select id, key_id, next_attempt_at from webhook_deliveries where status = ?"
                                   f" and next_attempt_at <= ?{others} order by next_attempt_at limit ?",
                                   DeliveryStatus.PENDING, t, *capped, idle)
                for row in rows:
                    if idle == 0 or sending[row["key_id"]] >= self.per_key:
                        continue
                    # the lease: another server on this data dir (or this one after a crash) waits for it
                    if self.db.execute("update webhook_deliveries set next_attempt_at = ? where id = ?"
                                       " and status = ? and next_attempt_at = ?", lease, row["id"],
                                       DeliveryStatus.PENDING, row["next_attempt_at"]):
                        with self._busy_lock:
                            self._busy += 1
                            self._key_of[row["id"]] = row["key_id"]
                        sending[row["key_id"]] += 1
                        idle -= 1
                        self._work.put(row["id"])
                if idle == 0 or len(rows) == 0:
                    break
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
                    self._key_of.pop(delivery_id, None)
                self._reschedule.set()
                self._wake.set()

    def secret_for(self, target: str, key_id: str | None) -> str | None:
        """The secret that signs deliveries to ``target``; None when it takes no more deliveries."""
        if target.startswith(JOB_TARGET):
            return self.hooks.job_secret(key_id)[0] if key_id is not None else None
        row = self.db.one("select secret from webhooks where id = ? and disabled_at is null", target)
        return row["secret"] if row is not None else None

    def send(self, delivery_id: str) -> None:
        """One attempt of one claimed delivery, and its outcome recorded."""
        import httpx  # here, not at the top: a server that has no webhook to send starts without it

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
        except (httpx.TimeoutException, _DeadlinePassed):
            self._retry(row, None, f"no answer within {self.hooks.timeout:g} s")
            return
        except httpx.HTTPError as exc:
            self._retry(row, None, f"{type(exc).__name__}: {exc}"[:500])
            return
        except (ValueError, httpx.InvalidURL) as exc:  # no attempt could reach it: it ends here
            self._finish(delivery_id, DeliveryStatus.FAILED, None, f"not a URL a delivery can go to: {exc}"[:500],
                         attempted=True)
            return
        if 200 <= status < 300:
            self._finish(delivery_id, DeliveryStatus.DELIVERED, status, None, attempted=True)
        elif status == 410:
            self._gone(row)
        else:
            self._retry(row, status, f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400
                                                         else ""))

    def _post(self, url: str, body: bytes, delivery_id: str, secret: str) -> int:
        import httpx

        address = self.hooks.policy.resolve(url)
        target = httpx.URL(url)
        headers = {"Host": target.netloc.decode("ascii"), "Content-Type": "application/json",
                   "User-Agent": self.user_agent, "FileKiln-Event-Id": delivery_id,
                   "FileKiln-Signature": signature(secret, int(time.time()), body)}
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        with self._tls_lock:
            if self._tls is None:  # what httpx.Client(trust_env=False) would make for each delivery
                self._tls = httpx.create_ssl_context(trust_env=False)
        # trust_env=False: a proxy from the environment would reach the target by a path not checked here
        with httpx.Client(timeout=self.hooks.timeout, follow_redirects=False, trust_env=False,
                          verify=self._tls) as client:
            # httpx's timeouts are per read: a target sending a byte a second would never trip them. At
            # the deadline the client is closed under the request, which then fails
            passed = threading.Event()

            def cut() -> None:
                passed.set()
                client.close()

            timer = threading.Timer(self.hooks.timeout, cut)
            timer.start()
            try:
                response = client.post(target.copy_with(host=address), content=body, headers=headers,
                                       extensions=extensions)
            except Exception as exc:
                if passed.is_set():
                    raise _DeadlinePassed() from exc
                raise
            finally:
                timer.cancel()
        if passed.is_set():
            raise _DeadlinePassed()
        return response.status_code

    def _finish(self, delivery_id: str, status: DeliveryStatus, http_status: int | None, error: str | None,
                attempted: bool = False) -> None:
        """End a delivery. ``last_error`` keeps the last failed attempt's error when this end brings none
        (a delivery that succeeded on a retry still says why the attempt before it failed)."""
        self.db.execute("update webhook_deliveries set status = ?, attempts = attempts + ?, last_status = ?,"
                        " last_error = coalesce(?, last_error), finished_at = ? where id = ?",
                        status, int(attempted), http_status, error, now(), delivery_id)

    def _retry(self, row: Any, http_status: int | None, error: str) -> None:
        attempts = row["attempts"] + 1
        schedule = self.hooks.retry_seconds
        log.info("webhook delivery %s to %s failed (attempt %d): %s", row["id"], shown(row["url"]), attempts, error)
        if attempts > len(schedule):
            self._finish(row["id"], DeliveryStatus.FAILED, http_status, error, attempted=True)
            return
        self.db.execute("update webhook_deliveries set attempts = ?, last_status = ?, last_error = ?,"
                        " next_attempt_at = ? where id = ?",
                        attempts, http_status, error, now() + schedule[attempts - 1], row["id"])

    def _gone(self, row: Any) -> None:
        """410: the target wants nothing more. A hook is disabled; a job's webhookUrl gets nothing more of it."""
        log.info("webhook target %s answered 410: disabled", shown(row["url"]))
        with self.db.transaction() as conn:
            conn.execute("update webhook_deliveries set status = ?, attempts = attempts + 1, last_status = 410,"
                         " finished_at = ? where id = ?", (DeliveryStatus.DROPPED, now(), row["id"]))
            conn.execute("update webhooks set disabled_at = ?, disabled_reason = ? where id = ?"
                         " and disabled_at is null", (now(), "the target answered 410 Gone", row["target"]))
            drop_pending(conn, row["target"])

