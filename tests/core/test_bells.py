"""The bells between processes on one data dir (localapi/core/bells.py), with real sockets and a real database."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from localapi.core.bells import EVENTS, QUEUE, Bells
from localapi.core.db import Database
from localapi.core.processes import process_identity


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
