"""Per-key token buckets, in memory (each server process limits its own traffic).

Reads and writes have buckets of their own: a script polling its jobs' state never uses up the
tokens it needs to upload and create the next job (see docs/api.md, "Rate limits").
"""

from __future__ import annotations

import math
import threading
import time


class RateLimiter:
    def __init__(self, rate_per_second: float, burst: int) -> None:
        self.rate = rate_per_second
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take one token; return 0 when allowed, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate


class RateLimits:
    """A write bucket and a read bucket per caller."""

    def __init__(self, writes: RateLimiter, reads: RateLimiter) -> None:
        self.writes = writes
        self.reads = reads

    def take(self, caller: str, method: str) -> float:
        """Take a token for one request; 0 when allowed, else the seconds to wait."""
        if method in ("GET", "HEAD"):
            return self.reads.take(caller)
        return self.writes.take(caller)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
