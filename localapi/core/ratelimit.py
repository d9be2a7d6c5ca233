"""Per-caller token buckets, in memory (each server process limits its own traffic).

Reads and writes have buckets of their own: a script polling its jobs' state never uses up the
tokens it needs to upload and create the next job (see docs/api.md, "Rate limits").
"""

from __future__ import annotations

import math
import threading
import time

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
