"""The metadata database on PostgreSQL behaves as FileKiln's SQLite does where the two could differ:
NUL in text, writes in commit order across connections, rows read by name or position, a server that
drops its connections."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from localapi.core.db import PostgresDatabase, SqliteDatabase
from localapi.core.errors import BadRequest
from tests.postgres import PostgresServer


@pytest.fixture
def pg(postgres: PostgresServer) -> PostgresDatabase:
    db = PostgresDatabase(postgres.create_database())
    yield db
    db.close()


def test_text_with_nul_is_never_found_and_never_stored(pg: PostgresDatabase, tmp_path: Path) -> None:
    lite = SqliteDatabase(tmp_path / "filekiln.db")
    for db in (pg, lite):  # a lookup by an id with NUL in it finds nothing on both
        assert db.one("select * from files where id = ?", "file_\x00") is None
        assert db.all("select * from jobs where tag = ?", "a\x00b") == []
    with pytest.raises(BadRequest, match="NUL"):
        pg.execute("insert into settings (name, value) values (?, ?)", "n", "a\x00b")
    assert pg.one("select count(*) from settings where name = 'n'")[0] == 0
    lite.close()


def test_rows_read_by_name_and_by_position(pg: PostgresDatabase) -> None:
    pg.execute("insert into settings (name, value) values (?, ?)", "colour", "teal")
    row = pg.one("select name, value from settings where name = ?", "colour")
    assert (row["name"], row[1], list(row.keys()), tuple(row)) == ("colour", "teal", ["name", "value"],
                                                                    ("colour", "teal"))
    assert dict(zip(row.keys(), row, strict=True)) == {"name": "colour", "value": "teal"}


def test_writes_from_many_threads_commit_in_the_order_of_their_numbers(pg: PostgresDatabase) -> None:
    """Each event's seq is taken inside the write lock, so a reader that saw seq n has seen every seq < n."""
    def write(n: int) -> None:
        for i in range(20):
            with pg.transaction() as conn:
                conn.execute("insert into job_events (job_id, key_id, type, job, created_at) values (?, ?, ?, ?, ?)"
                             " returning seq", (f"job_{n}", None, "job.progress", "{}", float(i))).fetchone()
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:  # the event feed's way: everything after the last seq seen, in order
        last = 0
        while not stop.is_set():
            rows = pg.all("select seq from job_events where seq > ? order by seq", last)
            for (seq,) in rows:
                assert seq == last + 1 or not seen, f"seq {seq} committed before seq {last + 1}"
                seen.append(seq)
                last = seq
    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    total = pg.one("select count(*), min(seq), max(seq) from job_events")
    assert total[0] == 120 and total[2] - total[1] == 119
    assert seen == list(range(seen[0], seen[0] + len(seen)))


def test_connections_the_server_dropped_are_replaced(pg: PostgresDatabase, postgres: PostgresServer) -> None:
    import psycopg

    import localapi.core.db as db_module

    pg.execute("insert into settings (name, value) values (?, ?)", "before", "1")
    with psycopg.connect(postgres.url("postgres"), autocommit=True) as admin:  # as a server restart does
        admin.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                      " where datname = current_database() is false and pid <> pg_backend_pid()"
                      " and backend_type = 'client backend'")
    saved = db_module.PING_AFTER
    db_module.PING_AFTER = 0.0  # as if the pooled connection had rested: checked as it is taken
    try:
        assert pg.get_setting("before") == "1"
        pg.execute("insert into settings (name, value) values (?, ?)", "after", "2")
    finally:
        db_module.PING_AFTER = saved
    assert pg.get_setting("after") == "2"
