"""Per-caller token buckets: in memory (each server process limits its own traffic), or, with the queue
on Redis, in Redis, shared by every API process of the install (:class:`SharedRateLimiter`).

Reads and writes have buckets of their own: a script polling its jobs' state never uses up the
tokens it needs to upload and create the next job (see docs/api.md, "Rate limits").
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

log = logging.getLogger("filekiln.ratelimit")

# buckets kept before the full ones are dropped (then twice as many as are left, at least this)
KEEP_BUCKETS = 10_000


class RateLimiter:
    def __init__(self, rate_per_second: float, burst: int) -> None:
        self.rate = rate_per_second
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._prune_at = KEEP_BUCKETS

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str) -> float:
        """Take one token; return 0 when allowed, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if len(self._buckets) >= self._prune_at:
                self._drop_full(now)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def _drop_full(self, now: float) -> None:
        """Forget the buckets that have filled up again: a full bucket and none are the same, and callers
        such as anonymous readers of one job come and go, so their buckets would otherwise pile up."""
        self._buckets = {key: (tokens, last) for key, (tokens, last) in self._buckets.items()
                         if tokens + (now - last) * self.rate < self.burst}
        self._prune_at = max(KEEP_BUCKETS, 2 * len(self._buckets))


# One bucket per caller, kept in Redis: refilled by Redis's own clock (TIME), so that the API processes'
# clocks need not agree; it expires once it would be full again. Returns the seconds to wait, as text
# (a Lua number would come back as an integer).
TAKE_SCRIPT = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return tostring(wait)
"""


class SharedRateLimiter:
    """A token bucket per caller in Redis: every API process of the install draws on the same one.

    One short script call per request (a round trip on the network, some 0.1-0.3 ms on a LAN). While
    Redis cannot be reached, each process falls back on its own buckets (``fallback``), and says so once."""

    def __init__(self, conn: Any, prefix: str, rate_per_second: float, burst: int, fallback: RateLimiter) -> None:
        self.rate = rate_per_second
        self.burst = burst
        self.prefix = prefix
        self.fallback = fallback
        self._take = conn.register_script(TAKE_SCRIPT)
        self._failing = False

    def take(self, key: str) -> float:
        if self.rate <= 0:
            return 0.0
        try:
            wait = float(self._take(keys=[self.prefix + key], args=[self.rate, self.burst]))
        except Exception as exc:
            if not self._failing:
                log.warning("rate limits are this process's own until Redis answers again: %s", exc)
                self._failing = True
            return self.fallback.take(key)
        if self._failing:
            log.warning("rate limits are shared through Redis again")
            self._failing = False
        return wait


class RateLimits:
    """A write bucket and a read bucket per caller."""

    def __init__(self, writes: RateLimiter | SharedRateLimiter, reads: RateLimiter | SharedRateLimiter) -> None:
        self.writes = writes
        self.reads = reads

    def take(self, caller: str, method: str) -> float:
        """Take a token for one request; 0 when allowed, else the seconds to wait."""
        if method in ("GET", "HEAD"):
            return self.reads.take(caller)
        return self.writes.take(caller)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))


def shared_limits(url: str, db: str, writes: RateLimiter, reads: RateLimiter) -> RateLimits:
    """The buckets of ``writes`` and ``reads`` kept in the Redis at ``url`` (the queue's), one set per install."""
    import redis  # only with the queue on Redis (the scale extra)

    conn = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    return RateLimits(
        SharedRateLimiter(conn, f"filekiln.{db}.rate.w.", writes.rate, int(writes.burst), writes),
        SharedRateLimiter(conn, f"filekiln.{db}.rate.r.", reads.rate, int(reads.burst), reads))
