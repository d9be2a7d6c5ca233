"""The pool of conversion processes: kept full, and a job that takes and returns a healthy child wakes
no thread and starts no process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from localapi.core.jobs.runner import SPARE_CHILDREN, ChildPool


def wait_for(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("the pool did not get there in time")


def test_a_healthy_child_serves_again_without_a_refill(tmp_path: Path) -> None:
    pool = ChildPool(1, tmp_path / "children")
    try:
        pool.fill()  # as the worker does when it starts
        wait_for(lambda: len(pool._idle) == 1 + SPARE_CHILDREN)
        started = {c.pid for c in pool._idle}
        for _ in range(3):  # take, run nothing, give back: the same processes, and the spawner left asleep
            child = pool.take()
            assert child is not None and child.pid in started
            assert not pool._wanted.is_set()
            assert child.reusable()
            pool.give_back(child)
            assert not pool._wanted.is_set()
        assert {c.pid for c in pool._idle} == started

        child = pool.take()  # a child that is not given back (its job failed): a new one takes its place
        assert child is not None
        child.close()
        assert not child.reusable()
        pool.give_back(None)
        wait_for(lambda: len(pool._idle) == 1 + SPARE_CHILDREN)
        assert {c.pid for c in pool._idle} - started
        assert all(c.alive() for c in pool._idle)
    finally:
        pool.close()
