"""The bells between processes on one data dir (localapi/core/bells.py), with real sockets and a real database."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from localapi.core.bells import EVENTS, QUEUE, Bells, RedisRelay
from localapi.core.db import SqliteDatabase as Database
from localapi.core.processes import process_identity
from tests.conftest import free_port


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return Database(tmp_path / "filekiln.db")


def test_a_ring_wakes_the_bells_that_want_its_kind_only(db: Database) -> None:
    here, there, other = Bells(db, process_identity()), Bells(db, process_identity()), Bells(db, process_identity())
    woken = {"there": threading.Event(), "other": threading.Event()}
    there.listen(QUEUE, woken["there"].set)
    other.listen(EVENTS, woken["other"].set)
    try:
        here.ring(QUEUE)
        assert woken["there"].wait(5), "the bell that wants queue news was not rung"
        assert not woken["other"].wait(0.3), "a bell that wants only events was rung for the queue"
        here.ring(EVENTS)
        assert woken["other"].wait(5)
    finally:
        for bells in (here, there, other):
            bells.close()
    assert db.all("select * from bells") == [], "a closed bell leaves its row behind"


def test_a_bell_does_not_ring_itself(db: Database) -> None:
    bells = Bells(db, process_identity())
    woken = threading.Event()
    bells.listen(EVENTS, woken.set)
    try:
        bells.ring(EVENTS)
        assert not woken.wait(0.3)
    finally:
        bells.close()


def test_the_row_of_a_process_that_is_gone_is_dropped_at_the_next_look(db: Database) -> None:
    dead = subprocess.run([sys.executable, "-c", "from localapi.core.processes import process_identity as p;"
                           " print(p())"], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    host = dead.split(":")[0]
    db.execute("insert into bells (id, host, port, kinds, updated_at) values (?, ?, 9, 'queue', 0)", f"{dead}#1", host)
    bells = Bells(db, process_identity())
    try:
        bells.ring(QUEUE)  # to nobody: the only other row is a process that has exited
        assert db.all("select * from bells") == []
    finally:
        bells.close()


def test_unlisten_keeps_the_other_kind_and_closing_ends_the_thread(db: Database) -> None:
    bells, ringer = Bells(db, process_identity()), Bells(db, process_identity())
    woken = threading.Event()
    bells.listen(QUEUE, lambda: None)
    bells.listen(EVENTS, woken.set)
    bells.unlisten(QUEUE)
    assert [r["kinds"] for r in db.all("select kinds from bells")] == ["events"]
    ringer.ring(EVENTS)
    assert woken.wait(5)
    before = threading.active_count()
    bells.close()
    ringer.close()
    assert threading.active_count() == before - 1, "the bell's thread outlived it"


@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason="redis-server is not installed here (Debian/Ubuntu: apt-get install redis-server)")
def test_with_the_queue_on_redis_job_changes_reach_other_machines(db: Database, tmp_path: Path) -> None:
    """Two processes on different hosts (as their bells say) share no loopback: the relay carries the ring."""
    from tests.api.test_queue_redis import RedisServer

    redis = RedisServer(free_port(), tmp_path)
    redis.start()
    here, there = Bells(db, process_identity()), Bells(db, process_identity())
    there.host = "another-machine"  # its loopback bell is out of reach from here, and this one from there
    for bells in (here, there):
        bells.relay = RedisRelay(redis.url, "0", bells.identity)
    woken, own = threading.Event(), threading.Event()
    try:
        there.listen(EVENTS, woken.set)
        here.listen(EVENTS, own.set)
        # each relay calls its listener once as it has subscribed (for what it may have missed): both are now
        assert woken.wait(30) and own.wait(30), "a relay did not subscribe"
        woken.clear()
        own.clear()
        here.ring(QUEUE)
        assert not woken.wait(0.5), "queued jobs are not relayed: workers wait inside Redis"
        here.ring(EVENTS)
        assert woken.wait(5), "a job change did not reach the other machine"
        assert not own.wait(0.5), "a process was woken by its own message"
    finally:
        for bells in (here, there):
            bells.close()
        redis.stop()
