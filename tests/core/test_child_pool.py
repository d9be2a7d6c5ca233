"""The pool of conversion processes: kept full, and a job that takes and returns a healthy child wakes
no thread and starts no process; a child's start-up does not count against its job's timeout."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from localapi.core.jobs import runner
from localapi.core.jobs.messages import InputSpec, JobSpec
from localapi.core.jobs.runner import SPARE_CHILDREN, ChildPool
from localapi.core.states import JobStatus


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


def test_a_pool_that_starts_nothing_ahead_keeps_the_children_jobs_gave_back(tmp_path: Path) -> None:
    """``warm_children = false``: no child is started before a job asks; one a job started and gave back
    healthy serves the next job, and the spawner never tops the pool up."""
    pool = ChildPool(2, tmp_path / "children", ahead=False)
    try:
        pool.fill()  # as the worker does when it starts
        assert not pool._short()  # what the spawner asks before it starts one: it starts none
        assert pool._idle == []
        assert pool.take() is None  # the job starts its own
        child = pool.new_child()
        pool.give_back(child)
        assert not pool._short()
        assert [c.pid for c in pool._idle] == [child.pid]  # kept, and nothing started beside it
        assert pool.take() is child
        child.close()
        pool.give_back(None)  # a failed job's child is not replaced ahead of the next job
        assert not pool._short()
        assert pool._idle == []
    finally:
        pool.close()


def test_a_jobs_timeout_runs_from_the_childs_start_not_from_its_launch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine a new child may take seconds to import Python and the engines; the job's
    own timeout (here 3 s, for a conversion of a few milliseconds) starts once the child is ready."""
    slow_start = ("import runpy, time; time.sleep(5); "
                  "runpy.run_module('localapi.core.jobs.child', run_name='__main__')")
    monkeypatch.setattr(runner, "child_command", lambda: [sys.executable, "-c", slow_start])
    src = tmp_path / "in.png"
    Image.new("RGB", (32, 24), (200, 40, 40)).save(src)
    out = tmp_path / "out"
    out.mkdir()
    spec = JobSpec(tool="image-convert", inputs=[InputSpec(str(src), "png", "in.png")], params={},
                   output_format="webp", out_dir=str(out))
    started = time.monotonic()
    outcome = runner.run_supervised(spec, log_path=tmp_path / "child.log", timeout=3.0, on_progress=lambda _: None,
                                    should_cancel=lambda: False)
    assert outcome.status == JobStatus.DONE, outcome
    assert time.monotonic() - started >= 5  # it did wait out the slow start
    assert [p.suffix for p in out.iterdir()] == [".webp"]
