"""The three swappable back-ends keep one contract, whichever is configured: the metadata database (SQLite
or PostgreSQL), the blob store (the data dir or an S3-compatible bucket) and the job queue (Huey on the
data dir's SQLite file or on Redis). Each test runs on the embedded implementation and on the scale-out
one, against real servers (the session's PostgreSQL and SeaweedFS, a Redis of this module's own), with the
same assertions: what the rest of FileKiln relies on. The scale-out back-ends are checked here in
process, so ``make test``'s second pass needs only its few end-to-end tests (docs/testing.md)."""

from __future__ import annotations

import hashlib
import itertools
import os
import sqlite3
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import httpx
import psycopg
import pytest

from localapi.config import SettingError, Settings
from localapi.core.db import Database, DatabaseError, PostgresDatabase, SqliteDatabase, new_id, now
from localapi.core.errors import BadRequest
from localapi.core.migrate import upgrade
from localapi.core.queue import JobQueue, WorkerPool
from localapi.core.storage import Blobs, BucketBlobs, LocalBlobs, open_blobs
from localapi.http.routes.downloads import content_disposition
from tests.conftest import free_port
from tests.postgres import SUPERUSER, PostgresServer
from tests.redisd import RedisServer, needs_redis, wait_for
from tests.seaweed import Seaweed

T = TypeVar("T")
PASSWORD = "pw-never-shown-4711"  # in every URL that can hold one; PostgreSQL's trust auth ignores it


def on_another_thread(db: Database, work: Callable[[], T]) -> T:
    """What ``work`` gives on a thread of its own (another request, another worker); its SQLite
    connection, which is per thread, is closed as the thread ends."""
    answer: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            answer.append(work())
        except BaseException as exc:
            failed.append(exc)
        finally:
            if isinstance(db, SqliteDatabase):
                db.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the other thread did not finish"
    if failed:
        raise failed[0]
    return answer[0]


def run_threads(db: Database, count: int, work: Callable[[int], None]) -> None:
    """``work(n)`` on ``count`` threads at once (each closes its SQLite connection as it ends); the first
    error of any is raised here."""
    failed: list[BaseException] = []
    start = threading.Barrier(count)

    def run(n: int) -> None:
        try:
            start.wait(timeout=30)
            work(n)
        except BaseException as exc:
            failed.append(exc)
        finally:
            if isinstance(db, SqliteDatabase):
                db.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread did not finish"
    if failed:
        raise failed[0]


# --------------------------------------------------------------------------- the metadata database


@pytest.fixture(scope="module")
def pg_template(postgres: PostgresServer) -> Iterator[str]:
    """A database brought to the schema once, which each test's database copies (as a first start makes it)."""
    name = f"contract_{uuid.uuid4().hex[:12]}"
    upgrade(postgres.create_database(name))
    yield name
    postgres.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A new metadata database at this release's schema, of each kind."""
    if request.param == "sqlite":
        lite = SqliteDatabase(tmp_path / "filekiln.db")
        yield lite
        lite.close()
        return
    postgres: PostgresServer = request.getfixturevalue("postgres")
    name = f"contract_{uuid.uuid4().hex[:12]}"
    url = postgres.create_database(name, template=request.getfixturevalue("pg_template"))
    pg = PostgresDatabase(url.replace(f"//{SUPERUSER}@", f"//{SUPERUSER}:{PASSWORD}@"))
    yield pg
    pg.close()
    postgres.drop_database(name)


def setting(db: Database, name: str) -> str | None:
    row = db.one("select value from settings where name = ?", name)
    return None if row is None else row["value"]


def test_the_database_says_what_and_where_it_is_without_a_password(db: Database) -> None:
    state = db.describe()
    assert state == {"kind": db.kind, "target": db.target, "ok": True, "error": None}, state
    assert db.kind in ("sqlite", "postgresql") and db.target
    assert PASSWORD not in repr(state), state


def test_execute_returns_the_number_of_rows_it_changed(db: Database) -> None:
    assert db.execute("insert into settings (name, value) values (?, ?)", "c-1", "a") == 1
    assert db.execute("insert into settings (name, value) values (?, ?), (?, ?)", "c-2", "a", "c-3", "b") == 2
    assert db.execute("update settings set value = ? where name like ?", "z", "c-%") == 3
    assert db.execute("update settings set value = ? where value = ?", "y", "b") == 0
    assert db.execute("update settings set value = ? where name = ? and value = ?", "y", "c-1", "z") == 1
    assert db.execute("insert into settings (name, value) values (?, ?) on conflict do nothing", "c-1", "x") == 0
    assert db.execute("insert into settings (name, value) values (?, ?) on conflict (name) do update set "
                      "value = excluded.value", "c-1", "x") == 1
    assert db.execute("delete from settings where name like ?", "c-%") == 3
    assert db.execute("delete from settings where name like ?", "c-%") == 0


def test_rows_are_read_by_name_and_by_position(db: Database) -> None:
    db.set_setting("colour", "teal")
    db.set_setting("shape", "round")
    row = db.one("select name, value from settings where name = ?", "colour")
    assert (row["name"], row["value"], row[0], row[1]) == ("colour", "teal", "colour", "teal")
    assert (list(row.keys()), tuple(row), len(row)) == (["name", "value"], ("colour", "teal"), 2)
    assert {k: row[k] for k in row.keys()} == {"name": "colour", "value": "teal"}  # as StoredFile(**...) reads it
    assert db.one("select name from settings where name = ?", "none such") is None
    rows = db.all("select name, value from settings where name in (?, ?) order by name desc", "colour", "shape")
    assert [(r["name"], r[1]) for r in rows] == [("shape", "round"), ("colour", "teal")]
    assert db.all("select name from settings where name = ?", "none such") == []
    assert db.one("select count(*) as n from settings")["n"] == db.one("select count(*) from settings")[0] == 2
    with db.reading() as conn:  # a few reads in a row on one connection
        assert conn.execute("select value from settings where name = ?", ("shape",)).fetchone()[0] == "round"
        assert [r[0] for r in conn.execute("select name from settings order by name").fetchall()] == \
            ["colour", "shape"]


def test_a_transaction_commits_on_success_and_rolls_back_everything_on_an_error(db: Database) -> None:
    with db.transaction() as conn:
        conn.execute("insert into settings (name, value) values (?, ?)", ("kept-1", "a"))
        db.execute("insert into settings (name, value) values (?, ?)", "kept-2", "b")
    assert on_another_thread(db, lambda: setting(db, "kept-1") == "a" and setting(db, "kept-2") == "b")
    with pytest.raises(RuntimeError, match="stop here"), db.transaction() as conn:
        conn.execute("insert into settings (name, value) values (?, ?)", ("lost-1", "a"))
        conn.execute("update settings set value = ? where name = ?", ("changed", "kept-1"))
        db.execute("insert into settings (name, value) values (?, ?)", "lost-2", "b")  # this thread's: in it
        db.execute("delete from settings where name = ?", "kept-2")
        raise RuntimeError("stop here")
    assert [tuple(r) for r in db.all("select name, value from settings order by name")] == \
        [("kept-1", "a"), ("kept-2", "b")]
    # a failing statement rolls back the rest too, and the database is usable afterwards
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)), db.transaction() as conn:
        conn.execute("insert into settings (name, value) values (?, ?)", ("lost-3", "a"))
        conn.execute("insert into settings (name, value) values (?, ?)", ("kept-1", "again"))
    assert setting(db, "lost-3") is None and setting(db, "kept-1") == "a"
    assert db.execute("insert into settings (name, value) values (?, ?)", "after", "c") == 1


def test_a_write_inside_a_transaction_on_the_same_thread_is_part_of_it(db: Database) -> None:
    with db.transaction():
        assert db.execute("insert into settings (name, value) values (?, ?)", "pending", "x") == 1
        assert setting(db, "pending") == "x", "this thread reads what its transaction wrote"
        assert on_another_thread(db, lambda: setting(db, "pending")) is None, "others see it only once committed"
        # a transaction in a transaction is refused (SQLite's and PostgreSQL's errors differ), the outer goes on
        with pytest.raises((DatabaseError, sqlite3.OperationalError)), db.transaction():
            pass
    assert on_another_thread(db, lambda: setting(db, "pending")) == "x"


def test_on_conflict_and_returning_behave_alike(db: Database) -> None:
    upsert = ("insert into usage (key_id, day, jobs) values (?, ?, 1) "
              "on conflict (key_id, day) do update set jobs = usage.jobs + 1")
    for _ in range(3):
        assert db.execute(upsert, "key_a", "2026-01-02") == 1
    assert db.one("select jobs from usage where key_id = ?", "key_a")["jobs"] == 3
    claim = ("insert into watched_files (folder_id, rel_path, size, mtime_ns, sha256, status, taken_at)"
             " values (?, ?, ?, ?, ?, ?, ?) on conflict do nothing returning id")
    version = ("wf_1", "in/a.pdf", 10, 123, "ab" * 32, "taken", now())
    with db.transaction() as conn:
        first = conn.execute(claim, version).fetchone()
        again = conn.execute(claim, version).fetchone()
        other = conn.execute(claim, (*version[:2], 11, *version[3:])).fetchone()
    assert isinstance(first[0], int) and again is None and other[0] > first[0], (first, again, other)
    event = "insert into job_events (job_id, key_id, type, job, created_at) values (?, ?, ?, ?, ?) returning seq"
    with db.transaction() as conn:
        seqs = [conn.execute(event, (f"job_{n}", None, "job.created", "{}", now())).fetchone()[0] for n in range(3)]
    assert seqs == [seqs[0], seqs[0] + 1, seqs[0] + 2], seqs
    assert [r[0] for r in db.all("select seq from job_events order by seq")] == seqs


def test_a_setting_made_once_keeps_its_first_value(db: Database) -> None:
    assert db.setting_once("signing_secret", "first") == "first"
    assert db.setting_once("signing_secret", "second") == "first"
    assert db.get_setting("signing_secret") == "first"
    assert db.get_setting("unset") is None and db.get_setting("unset", "fallback") == "fallback"
    db.set_setting("mode", "a")
    db.set_setting("mode", "b")
    assert db.get_settings("mode", "signing_secret", "unset") == {"mode": "b", "signing_secret": "first"}
    # processes starting together on one database all end up with one value
    got: list[str] = []
    run_threads(db, 4, lambda n: got.append(db.setting_once("shared", f"made-by-{n}")))
    assert len(got) == 4 and len(set(got)) == 1 and got[0].startswith("made-by-"), got


def test_writers_on_many_threads_lose_no_update(db: Database) -> None:
    """4 threads, 50 times each: read a counter and write it back plus one, in a transaction (the write
    lock must keep them apart), and bump another with one upsert outside any transaction."""
    db.execute("insert into usage (key_id, day, jobs) values (?, ?, ?)", "key_rmw", "d", 0)
    upsert = ("insert into usage (key_id, day, jobs) values (?, ?, 1) "
              "on conflict (key_id, day) do update set jobs = usage.jobs + 1")

    def write(_: int) -> None:
        for _ in range(50):
            with db.transaction() as conn:
                seen = conn.execute("select jobs from usage where key_id = ?", ("key_rmw",)).fetchone()[0]
                conn.execute("update usage set jobs = ? where key_id = ?", (seen + 1, "key_rmw"))
            db.execute(upsert, "key_upsert", "d")

    run_threads(db, 4, write)
    counts = {r["key_id"]: r["jobs"] for r in db.all("select key_id, jobs from usage")}
    assert counts == {"key_rmw": 200, "key_upsert": 200}, counts


def test_values_come_back_as_they_went_in(db: Database) -> None:
    stamp = 1764240000.123456  # timestamps keep their microseconds (double precision)
    db.execute("insert into bells (id, host, port, kinds, updated_at) values (?, ?, ?, ?, ?)", "b1", "h", 1, "q", stamp)
    db.execute("insert into bells (id, host, port, kinds, updated_at) values (?, ?, ?, ?, ?)",
               "b2", "h", 2, "q", stamp + 0.000001)
    assert db.one("select updated_at from bells where id = ?", "b1")[0] == stamp
    assert [r[0] for r in db.all("select id from bells where updated_at > ? order by id", stamp)] == ["b2"]
    t = now()
    db.execute("update bells set updated_at = ? where id = ?", t, "b1")
    assert db.one("select updated_at from bells where id = ?", "b1")[0] == t
    # big integers stay integers, Python's bools are the schema's 0/1, None is NULL
    db.execute("insert into watch_folders (id, in_dir, out_dir, preset, recursive, paused, created_at)"
               " values (?, ?, ?, ?, ?, ?, ?)", "w1", "/in", "/out", "p", True, False, t)
    row = db.one("select recursive, paused, last_error from watch_folders where id = ?", "w1")
    assert (row[0], row[1], row[2]) == (1, 0, None) and type(row[0]) is int
    assert db.one("select count(*) from watch_folders where recursive = ?", True)[0] == 1
    big = 5 * 1024**3 + 7
    db.execute("insert into watched_files (folder_id, rel_path, size, mtime_ns, sha256, status, taken_at)"
               " values (?, ?, ?, ?, ?, ?, ?)", "w1", "x", big, 1_764_240_000_123_456_789, "s", "taken", t)
    row = db.one("select size, mtime_ns from watched_files where folder_id = ?", "w1")
    assert (row["size"], row["mtime_ns"]) == (big, 1_764_240_000_123_456_789)


def test_is_not_distinct_from_matches_null_as_a_value(db: Database) -> None:
    """The lists of the desktop's jobs (key NULL) and of a key's ask ``key_id is not distinct from ?``."""
    insert = ("insert into files (id, key_id, original_name, mime_type, size_bytes, kind, created_at, expires_at)"
              " values (?, ?, ?, ?, ?, ?, ?, ?)")
    for file_id, key_id in (("f1", None), ("f2", "key_a"), ("f3", None), ("f4", "key_b")):
        db.execute(insert, file_id, key_id, "a.txt", "text/plain", 1, "upload", 1.0, 2.0)

    def ids(where: str, value: str | None) -> list[str]:
        return [r[0] for r in db.all(f"select id from files where {where} order by id", value)]

    assert ids("key_id is not distinct from ?", None) == ["f1", "f3"]
    assert ids("key_id is not distinct from ?", "key_a") == ["f2"]
    assert ids("key_id is distinct from ?", None) == ["f2", "f4"]
    assert ids("key_id = ?", None) == [], "= never matches NULL: why the code says is not distinct from"


def test_text_with_a_nul_character_is_found_nowhere_and_postgresql_refuses_to_store_it(db: Database) -> None:
    """An id with NUL in a URL is not found on either back-end; PostgreSQL's text cannot hold NUL, so a
    write there is refused in words (a 400 in the API), where SQLite keeps it as any other character."""
    db.execute("insert into settings (name, value) values (?, ?)", "plain", "x")
    assert db.one("select value from settings where name = ?", "pla\x00in") is None
    assert db.all("select value from settings where name = ?", "pla\x00in") == []
    write = ("insert into settings (name, value) values (?, ?)", "with-nul", "a\x00b")
    if isinstance(db, PostgresDatabase):
        with pytest.raises(BadRequest, match="NUL"):
            db.execute(*write)
        assert setting(db, "with-nul") is None
    else:
        db.execute(*write)
        assert setting(db, "with-nul") == "a\x00b"


# --------------------------------------------------------------------------- the blob stores


@pytest.fixture(params=["local", "bucket"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Blobs]:
    """A blob store as ``open_blobs`` makes it from the settings: the data dir's, or a prefix of the test's
    own in a bucket (emptied afterwards), with presigned downloads."""
    if request.param == "local":
        yield open_blobs(Settings(data_dir=tmp_path), tmp_path / "files")
        return
    seaweed: Seaweed = request.getfixturevalue("seaweed")
    prefix = f"contract-{uuid.uuid4().hex[:12]}"
    settings = Settings(data_dir=tmp_path, **seaweed.settings("filekiln", prefix), s3_presigned_downloads=True)
    store = open_blobs(settings, tmp_path / "files")
    yield store
    assert isinstance(store, BucketBlobs)
    listed = store.client.list_objects_v2(Bucket="filekiln", Prefix=prefix + "/")
    for item in listed.get("Contents", []):
        store.client.delete_object(Bucket="filekiln", Key=item["Key"])


def source(tmp_path: Path, data: bytes) -> Path:
    """An upload as the spool leaves it."""
    path = tmp_path / f"{new_id('tmp')}.part"
    path.write_bytes(data)
    return path


def stored(blobs: Blobs, tmp_path: Path, data: bytes) -> str:
    file_id = new_id("file")
    assert blobs.put(source(tmp_path, data), file_id, move=True) == len(data)
    return file_id


@pytest.mark.parametrize("move", [True, False], ids=["move", "copy"])
def test_put_takes_the_bytes_and_returns_their_size(blobs: Blobs, tmp_path: Path, move: bool) -> None:
    data = os.urandom(200_000)
    spooled = source(tmp_path, data)
    file_id = new_id("file")
    assert blobs.put(spooled, file_id, move=move) == len(data)
    assert spooled.exists() is not move, "a move leaves nothing in the spool; a copy leaves its source"
    with blobs.open(file_id) as f:
        assert f.read() == data
    empty = new_id("file")
    assert blobs.put(source(tmp_path, b""), empty, move=move) == 0
    with blobs.open(empty) as f:
        assert f.read() == b"" and f.read(10) == b""


def test_an_open_blob_reads_from_any_offset(blobs: Blobs, tmp_path: Path) -> None:
    data = bytes(range(256)) * 2000
    file_id = stored(blobs, tmp_path, data)
    with blobs.open(file_id) as f:
        assert f.seekable() and f.tell() == 0
        assert f.read(10) == data[:10] and f.tell() == 10
        assert f.seek(300_000) == 300_000 and f.tell() == 300_000
        assert f.read(7) == data[300_000:300_007] and f.tell() == 300_007
        f.seek(len(data) - 3)
        assert f.read(100) == data[-3:] and f.read(100) == b""
        f.seek(len(data) + 50)
        assert f.read(10) == b""
        f.seek(5)
        assert f.read() == data[5:]
    # a range as a download streams it: seek to its start, then chunks until its length
    start, length, got = 100_001, 250_000, b""
    with blobs.open(file_id) as f:
        f.seek(start)
        while len(got) < length:
            chunk = f.read(min(65_536, length - len(got)))
            assert chunk, "ended early"
            got += chunk
    assert got == data[start:start + length]


def test_local_and_fetch_give_a_file_with_the_same_bytes(blobs: Blobs, tmp_path: Path) -> None:
    data = os.urandom(150_000)
    file_id = stored(blobs, tmp_path, data)
    here = blobs.local(file_id)
    assert here.read_bytes() == data and blobs.local(file_id).read_bytes() == data
    scratch = tmp_path / "jobs" / "job_1" / "in"
    fetched = blobs.fetch(file_id, scratch)
    assert fetched.name == file_id and fetched.read_bytes() == data
    other = new_id("file")  # a store with nothing cached, as a worker on another machine
    blobs.put(source(tmp_path, data[::-1]), other, move=False)
    assert blobs.fetch(other, tmp_path / "jobs" / "job_2" / "in").read_bytes() == data[::-1]


def test_a_deleted_blob_cannot_be_opened_and_deleting_again_is_quiet(blobs: Blobs, tmp_path: Path) -> None:
    file_id = stored(blobs, tmp_path, b"to be deleted")
    blobs.local(file_id)
    blobs.delete(file_id)
    with pytest.raises(FileNotFoundError):  # what FileStore.open promises, and downloads answer 410 on
        blobs.open(file_id)
    blobs.delete(file_id)  # a purge that runs twice, or a discard after a failed put
    blobs.delete(new_id("file"))
    with pytest.raises(FileNotFoundError):
        blobs.open(new_id("file"))


def test_local_and_fetch_of_a_missing_blob_raise_file_not_found(blobs: Blobs, tmp_path: Path) -> None:
    """A job whose input's bytes are gone (purged meanwhile) is told so as it fetches them, on either store."""
    file_id = stored(blobs, tmp_path, b"soon gone")
    blobs.delete(file_id)
    looks: list[Callable[[], Path]] = [lambda: blobs.local(file_id), lambda: blobs.fetch(file_id, tmp_path / "in")]
    for look in looks:
        try:
            path = look()
        except FileNotFoundError:
            continue
        raise AssertionError(f"no FileNotFoundError: {path} (exists: {path.exists()})")


def test_presign_is_none_for_the_data_dir_and_a_link_that_serves_the_bytes_for_a_bucket(
        blobs: Blobs, tmp_path: Path) -> None:
    data = os.urandom(70_000)
    file_id = stored(blobs, tmp_path, data)
    disposition = content_disposition("Straße 1.pdf")
    url = blobs.presign(file_id, 60, disposition, "application/pdf")
    if isinstance(blobs, LocalBlobs):
        assert url is None, "downloads from the data dir go through the API"
        return
    assert url is not None and "X-Amz-Expires=60" in url, url
    answer = httpx.get(url, timeout=30)
    assert answer.status_code == 200 and answer.content == data
    assert answer.headers["content-disposition"] == disposition, answer.headers
    assert answer.headers["content-type"] == "application/pdf", answer.headers
    assert httpx.get(url.replace("X-Amz-Signature=", "X-Amz-Signature=0"), timeout=30).status_code == 403
    assert isinstance(blobs, BucketBlobs)
    unsigned = BucketBlobs(replace(blobs.settings, s3_presigned_downloads=False), tmp_path / "other-cache")
    assert unsigned.presign(file_id, 60, disposition, "application/pdf") is None


def test_a_blob_past_the_multipart_threshold_round_trips(blobs: Blobs, tmp_path: Path) -> None:
    part = 8 * 1024 * 1024  # boto3 puts anything from 8 MiB on in parts of 8 MiB
    data = os.urandom(part + 1024 * 1024 + 17)
    file_id = new_id("file")
    assert blobs.put(source(tmp_path, data), file_id, move=False) == len(data)
    with blobs.open(file_id) as f:
        whole = hashlib.sha256()
        while chunk := f.read(1024 * 1024):
            whole.update(chunk)
        assert whole.hexdigest() == hashlib.sha256(data).hexdigest()
        f.seek(part - 5)  # across the parts' seam
        assert f.read(10) == data[part - 5:part + 5]
    assert blobs.fetch(file_id, tmp_path / "in").read_bytes() == data
    if isinstance(blobs, BucketBlobs):  # it went up in parts: the store's ETag says how many
        head = blobs.client.head_object(Bucket=blobs.target.bucket, Key=blobs.key(file_id))
        assert head["ContentLength"] == len(data) and head["ETag"].strip('"').endswith("-2"), head


# --------------------------------------------------------------------------- the job queue


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis of this module's own, with a database number for each test."""
    server = RedisServer(free_port(), tmp_path_factory.mktemp("redis"), ("--databases", "64"))
    server.start()
    yield server
    server.stop()


REDIS_DBS = itertools.count(1)


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=needs_redis)])
def queue_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The queue_url of each kind: empty (Huey on the data dir's SQLite file) or a Redis database of the
    test's own (flushed afterwards)."""
    if request.param == "sqlite":
        yield ""
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    number = next(REDIS_DBS)
    yield f"redis://127.0.0.1:{server.port}/{number}"
    import redis

    client = redis.Redis(host="127.0.0.1", port=server.port, db=number, socket_timeout=5)
    client.flushdb()
    client.close()


@pytest.fixture
def queues(queue_url: str, tmp_path: Path) -> Iterator[Callable[[], JobQueue]]:
    """Makes JobQueues on one queue, as the processes of one install each make theirs; closed afterwards."""
    made: list[JobQueue] = []

    def make() -> JobQueue:
        made.append(JobQueue(tmp_path / "queue.db", queue_url))
        return made[-1]

    yield make
    for queue in made:
        if queue.remote:
            queue.huey.storage.pool.disconnect()
        else:
            queue.huey.storage.close()


def drain(queue: JobQueue) -> list[str]:
    """The job ids of the messages waiting, taken one by one as a worker takes them."""
    taken = []
    while (task := queue.huey.dequeue()) is not None:
        taken.append(task.args[0])
    return taken


def test_a_message_is_received_once_in_the_order_it_was_sent(queues: Callable[[], JobQueue]) -> None:
    api, worker = queues(), queues()
    api.check()  # raises when the queue cannot be reached
    assert api.describe()["ok"] is True
    sent = [f"job_{n}" for n in range(6)]
    for job_id in sent:
        api.enqueue(job_id)
    assert api.pending() == worker.pending() == 6
    task = worker.huey.dequeue()
    ran: list[str] = []
    worker.handler = ran.append
    worker.huey.execute(task)  # what a worker thread does with it: the handler gets the job id
    assert ran == ["job_0"]
    assert drain(worker) == sent[1:], "first in, first out"
    assert drain(api) == [] and api.pending() == 0


def test_workers_in_two_processes_take_each_message_once(queues: Callable[[], JobQueue]) -> None:
    api = queues()
    received: list[str] = []
    lock = threading.Lock()

    def handler(job_id: str) -> None:
        with lock:
            received.append(job_id)

    pools = []
    for _ in range(2):  # two worker processes on one queue, two threads each
        worker = queues()
        worker.handler = handler
        pools.append(WorkerPool(worker, 2, poll_interval=0.05))
    for pool in pools:
        pool.start()
    try:
        sent = [f"job_{n}" for n in range(40)]
        for job_id in sent:
            api.enqueue(job_id)
        wait_for(lambda: len(received) >= len(sent), "every message to reach a worker", timeout=30)
        wait_for(lambda: api.pending() == 0, "an empty queue", timeout=10)
    finally:
        for pool in pools:
            pool.stop()
    counts = Counter(received)
    assert set(counts) == set(sent) and set(counts.values()) == {1}, counts


def test_flush_empties_the_queue(queues: Callable[[], JobQueue]) -> None:
    api, worker = queues(), queues()
    for n in range(3):
        api.enqueue(f"job_{n}")
    assert worker.pending() == 3
    worker.flush()  # as a start rebuilds the queue from the job table
    assert api.pending() == worker.pending() == 0
    assert drain(worker) == []
    api.enqueue("job_after")
    assert drain(worker) == ["job_after"]


@needs_redis
def test_resync_puts_back_the_messages_a_restarted_redis_forgot(redis_server: RedisServer, tmp_path: Path) -> None:
    """Redis only: the data dir's queue is rebuilt from the job table at each start (flush, then requeue)."""
    number = next(REDIS_DBS)
    queue = JobQueue(tmp_path / "queue.db", f"redis://127.0.0.1:{redis_server.port}/{number}")
    try:
        queue.waiting = lambda: ["job_a", "job_b", "job_c"]  # the QUEUED jobs of the table, oldest first
        queue.enqueue("job_c")
        assert queue.resync() == 2 and queue.pending() == 3
        assert queue.resync() == 0 and queue.pending() == 3, "a queue that has them all gets none more"
        assert sorted(drain(queue)) == ["job_b", "job_c", "job_c"]  # a message means "a job waits"
    finally:
        queue.flush()
        queue.huey.storage.pool.disconnect()


def test_an_unreachable_redis_is_named_in_words_without_its_password(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    queue = JobQueue(tmp_path / "queue.db", f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    target = f"redis://127.0.0.1:{port}/0"
    with pytest.raises(SettingError) as refused:
        queue.check()
    message = str(refused.value)
    assert message.startswith(f"The job queue at {target} cannot be reached: ") and "connection refused" in message
    assert PASSWORD not in message, message
    # a request that enqueues costs nothing more: the job waits in the table until resync
    queue.enqueue("job_1")
    assert queue.pending() == 0 and queue.outage.error and PASSWORD not in queue.outage.error
    state = queue.describe()
    assert state["ok"] is False and state["target"] == target and PASSWORD not in repr(state), state
    queue.huey.storage.pool.disconnect()
