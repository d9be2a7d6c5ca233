"""Local API keys: random secrets, stored only as hashes, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from localapi.core.db import Database, new_id, now

SECRET_PREFIX = "fk_"
PREFIX_LEN = 10  # "fk_" + 7 characters: enough to recognise a key, useless to guess it
LAST_USED_RESOLUTION = 30.0  # seconds; avoids a write on every request


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    prefix: str
    created_at: float
    last_used_at: float | None
    revoked_at: float | None
    daily_job_quota: int | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _hash(secret: str) -> str:
    # secrets carry 256 random bits, so a plain SHA-256 is not brute-forceable
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


class KeyService:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, name: str, daily_job_quota: int | None = None) -> tuple[ApiKey, str]:
        """Create a key; the secret is returned here and never again."""
        if daily_job_quota is not None and daily_job_quota < 0:
            raise ValueError("daily job quota must be >= 0")
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        key_id = new_id("key")
        self.db.execute(
            "insert into keys (id, name, prefix, secret_hash, created_at, daily_job_quota) values (?, ?, ?, ?, ?, ?)",
            key_id, name.strip()[:100] or "key", secret[:PREFIX_LEN], _hash(secret), now(), daily_job_quota,
        )
        return self.get(key_id), secret

    def get(self, key_id: str) -> ApiKey:
        row = self.db.one(
            "select id, name, prefix, created_at, last_used_at, revoked_at, daily_job_quota from keys where id = ?",
            key_id,
        )
        if row is None:
            raise KeyError(key_id)
        return ApiKey(**{k: row[k] for k in row.keys()})

    def list(self) -> list[ApiKey]:
        rows = self.db.all(
            "select id, name, prefix, created_at, last_used_at, revoked_at, daily_job_quota from keys"
            " order by created_at"
        )
        return [ApiKey(**{k: r[k] for k in r.keys()}) for r in rows]

    def revoke(self, key_id: str) -> ApiKey:
        if self.db.execute("update keys set revoked_at = ? where id = ? and revoked_at is null", now(), key_id) == 0:
            self.get(key_id)  # raises KeyError for an unknown id; revoking twice is harmless
        return self.get(key_id)

    def lookup(self, secret: str) -> ApiKey | None:
        """The active key whose secret this is, or ``None``; one read. Read from the database every
        time, so keys created or revoked by another process take effect at once."""
        digest = _hash(secret)
        row = self.db.one(
            "select id, name, prefix, created_at, last_used_at, revoked_at, daily_job_quota, secret_hash from keys"
            " where secret_hash = ?", digest)
        if row is None or not hmac.compare_digest(row["secret_hash"], digest) or row["revoked_at"] is not None:
            return None
        return ApiKey(**{k: row[k] for k in row.keys() if k != "secret_hash"})

    @staticmethod
    def stale_use(key: ApiKey) -> bool:
        """Whether the key's recorded last use is old enough to write again (not on every request)."""
        return key.last_used_at is None or now() - key.last_used_at > LAST_USED_RESOLUTION

    def mark_used(self, key_id: str) -> None:
        self.db.execute("update keys set last_used_at = ? where id = ?", now(), key_id)

    def jobs_today(self, key_id: str) -> int:
        row = self.db.one("select jobs from usage where key_id = ? and day = ?", key_id, today())
        return int(row["jobs"]) if row else 0
