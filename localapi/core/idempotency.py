"""``Idempotency-Key``: the same key and request give the original response, never a second job.

A request claims its key before doing the work; the claim names the process that made it (its
identity, as job workers name theirs) and carries that process's heartbeat. Several API processes
may share one database, so a claim is never judged by who started first: it is given up by its own
process (the request failed, or the process is stopping), or taken over by the next request once its
process is gone — at once when that process ran on this machine, after ``STALE_SECONDS`` without a
heartbeat when it ran on another.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from localapi.core.db import Database, Row, now
from localapi.core.errors import Conflict, InvalidParams
from localapi.core.processes import process_identity, process_is_gone

HEARTBEAT_SECONDS = 10.0  # how often a running process marks its claims as still held
STALE_SECONDS = 60.0  # a claim unmarked for this long belongs to a process that is gone


@dataclass(frozen=True)
class Replay:
    status_code: int
    body: Any
    request_hash: str | None


def request_hash(operation: str, payload: Any) -> str:
    canonical = json.dumps([operation, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class IdempotencyStore:
    def __init__(self, db: Database, ttl_seconds: float, owner: str | None = None) -> None:
        self.db = db
        self.ttl = ttl_seconds
        self.owner = owner or process_identity()

    def lookup(self, key_id: str, idem_key: str) -> Replay | None:
        """A finished record to replay; None when there is none, or only the claim of a process that is
        gone. Raises 409 while a live request holds the key."""
        row = self.db.one("select * from idempotency where key_id = ? and idem_key = ? and created_at > ?",
                          key_id, idem_key, now() - self.ttl)
        if row is None or self._orphaned(row):
            return None
        return _replay(row)

    def begin(self, key_id: str, idem_key: str, req_hash: str | None) -> Replay | None:
        """Claim ``idem_key`` for this request, or return the response to replay.

        Exactly one of several concurrent identical requests gets ``None`` (and does
        the work); the others get 409 until it finishes, then the replay.
        """
        with self.db.transaction() as conn:
            row = conn.execute("select * from idempotency where key_id = ? and idem_key = ?",
                               (key_id, idem_key)).fetchone()
            if row is not None and (row["created_at"] <= now() - self.ttl or self._orphaned(row)):
                conn.execute("delete from idempotency where key_id = ? and idem_key = ?", (key_id, idem_key))
                row = None
            if row is None:
                conn.execute("insert into idempotency (key_id, idem_key, request_hash, state, created_at, owner,"
                             " heartbeat_at) values (?, ?, ?, 'in_flight', ?, ?, ?)",
                             (key_id, idem_key, req_hash, now(), self.owner, now()))
                return None
        replay = _replay(row)
        self.check_same(replay, req_hash)
        return replay

    def _orphaned(self, row: Row) -> bool:
        """An in-flight claim whose process is gone (this process is not: its own claims never are)."""
        if row["state"] != "in_flight" or row["owner"] == self.owner:
            return False
        last_sign = row["heartbeat_at"] or row["created_at"]
        return now() - last_sign > STALE_SECONDS or process_is_gone(row["owner"])

    @staticmethod
    def check_same(replay: Replay, req_hash: str | None) -> None:
        if req_hash is not None and replay.request_hash is not None and replay.request_hash != req_hash:
            raise InvalidParams("This Idempotency-Key was used with a different request.",
                                code="idempotency_mismatch")

    def complete(self, key_id: str, idem_key: str, status_code: int, body: Any, req_hash: str | None = None) -> None:
        self.db.execute(
            "update idempotency set state = 'done', status_code = ?, body = ?,"
            " request_hash = coalesce(request_hash, ?) where key_id = ? and idem_key = ?",
            status_code, json.dumps(body), req_hash, key_id, idem_key)

    def abandon(self, key_id: str, idem_key: str) -> None:
        """Forget a claim whose request failed, so that the client may retry it."""
        self.db.execute("delete from idempotency where key_id = ? and idem_key = ? and state = 'in_flight'",
                        key_id, idem_key)

    def heartbeat(self) -> None:
        """Mark this process's claims as still held; run every ``HEARTBEAT_SECONDS`` while it serves."""
        self.db.execute("update idempotency set heartbeat_at = ? where owner = ? and state = 'in_flight'",
                        now(), self.owner)

    def release(self) -> None:
        """Give up every claim of this process: it is stopping, and its requests will not finish."""
        self.db.execute("delete from idempotency where owner = ? and state = 'in_flight'", self.owner)


def _replay(row: Row) -> Replay:
    """The record's response, or 409 while its request is still being handled."""
    if row["state"] != "done":
        raise Conflict("A request with this Idempotency-Key is still being processed.",
                       code="idempotency_in_flight", headers={"Retry-After": "1"})
    return Replay(row["status_code"], json.loads(row["body"]), row["request_hash"])
