"""``Idempotency-Key``: the same key and request give the original response, never a second job."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from localapi.core.db import Database, now
from localapi.core.errors import Conflict, InvalidParams


@dataclass(frozen=True)
class Replay:
    status_code: int
    body: Any
    request_hash: str | None


def request_hash(operation: str, payload: Any) -> str:
    canonical = json.dumps([operation, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class IdempotencyStore:
    def __init__(self, db: Database, ttl_seconds: float) -> None:
        self.db = db
        self.ttl = ttl_seconds

    def lookup(self, key_id: str, idem_key: str) -> Replay | None:
        """A finished record (raises 409 while the first request is still in flight)."""
        row = self.db.one("select * from idempotency where key_id = ? and idem_key = ? and created_at > ?",
                          key_id, idem_key, now() - self.ttl)
        if row is None:
            return None
        if row["state"] != "done":
            raise Conflict("A request with this Idempotency-Key is still being processed.",
                           code="idempotency_in_flight", headers={"Retry-After": "1"})
        return Replay(row["status_code"], json.loads(row["body"]), row["request_hash"])

    def begin(self, key_id: str, idem_key: str, req_hash: str | None) -> Replay | None:
        """Claim ``idem_key`` for this request, or return the response to replay.

        Exactly one of several concurrent identical requests gets ``None`` (and does
        the work); the others get 409 until it finishes, then the replay.
        """
        with self.db.transaction() as conn:
            conn.execute("delete from idempotency where key_id = ? and idem_key = ? and created_at <= ?",
                         (key_id, idem_key, now() - self.ttl))
            try:
                conn.execute("insert into idempotency (key_id, idem_key, request_hash, state, created_at)"
                             " values (?, ?, ?, 'in_flight', ?)", (key_id, idem_key, req_hash, now()))
                return None
            except sqlite3.IntegrityError:
                pass
        replay = self.lookup(key_id, idem_key)
        if replay is None:  # expired between the two statements: try once more
            return self.begin(key_id, idem_key, req_hash)
        self.check_same(replay, req_hash)
        return replay

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
