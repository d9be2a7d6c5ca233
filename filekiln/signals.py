"""Stop signals for the commands that run until told to stop (worker, watch) or can be interrupted.

The kernel hands a signal sent to the process to any of its threads, and CPython runs the
Python handler only in the main thread, the next time that thread runs Python code. A main
thread asleep on a lock (``threading.Event().wait()`` without a timeout) is not woken when the
signal landed in a worker thread, so it may never see it. And a handler that calls
``Event.set()`` can deadlock when it runs while the main thread holds that event's lock inside
``Event.wait``. So the handler here only records the signal, and the wait sleeps in ``select``
on the wakeup fd, which CPython's C-level handler writes whatever thread took the signal.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

# a last resort: how long a wait sleeps at most before looking at the flag again
_RECHECK_SECONDS = 1.0


class Caught:
    """Which stop signal arrived, if any, and a wait for one that always wakes."""

    def __init__(self, wakeup: int) -> None:
        self._wakeup = wakeup
        self.signum: int | None = None

    def _record(self, signum: int, frame: object) -> None:
        self.signum = signum  # no lock taken: the main thread may be anywhere when this runs

    def is_set(self) -> bool:
        return self.signum is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until a signal arrives or ``timeout`` passes; whether one has arrived."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.signum is None:  # each turn of the loop lets CPython run a pending handler
            left = _RECHECK_SECONDS if deadline is None else min(deadline - time.monotonic(), _RECHECK_SECONDS)
            if left <= 0:
                break
            if select.select([self._wakeup], [], [], left)[0]:
                os.read(self._wakeup, 512)
        return self.signum is not None


@contextmanager
def caught(*signums: int) -> Iterator[Caught]:
    """Record ``signums`` (SIGINT and SIGTERM when none are given) instead of their default action,
    for the block's length. Call from the main thread."""
    signums = signums or (signal.SIGINT, signal.SIGTERM)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    flag = Caught(read_end)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = {s: signal.signal(s, flag._record) for s in signums}
    try:
        yield flag
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(read_end)
        os.close(write_end)
