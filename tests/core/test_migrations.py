"""The metadata schema comes from Alembic's migrations (localapi/migrations), the same for SQLite and
PostgreSQL, and a data dir made before migrations existed upgrades in place: its key still opens the door,
and its files and jobs are all there. The fixture data dir (tests/fixtures/before-migrations) was made by
FileKiln as released before migrations: a key with a daily quota, an upload, a finished job and a webhook."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from localapi.core.db import SCHEMA_HEAD, PostgresDatabase, SqliteDatabase
from localapi.core.migrate import SNAPSHOT, dump_sqlite_schema, scripts, upgrade
from tests.conftest import png_bytes, start_server, upload, wait_job
from tests.postgres import PostgresServer

BEFORE = Path(__file__).resolve().parents[1] / "fixtures" / "before-migrations"


def test_the_code_knows_the_newest_migration() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(scripts()))
    assert ScriptDirectory.from_config(config).get_heads() == [SCHEMA_HEAD]


def sqlite_master(path: Path) -> set[tuple[str, str, str, str | None]]:
    conn = sqlite3.connect(path)
    try:
        return set(conn.execute("select type, name, tbl_name, sql from sqlite_master").fetchall())
    finally:
        conn.close()


def test_the_sqlite_snapshot_is_what_the_migrations_make() -> None:
    assert (scripts() / SNAPSHOT).read_text(encoding="utf-8") == dump_sqlite_schema(), (
        f"{SNAPSHOT} is not the schema of the newest migration: run `python -m localapi.core.migrate`")


def test_a_new_sqlite_database_is_made_from_the_snapshot_without_alembic_as_alembic_makes_it(tmp_path: Path) -> None:
    made = tmp_path / "new" / "filekiln.db"
    code = ("import sys; from pathlib import Path; from localapi.core.db import SqliteDatabase; "
            f"SqliteDatabase(Path({str(made)!r})).close(); "
            "print(sorted(m for m in ('alembic', 'sqlalchemy') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "[]", run.stdout  # neither was imported
    upgrade(f"sqlite:///{tmp_path / 'alembic.db'}")
    assert sqlite_master(made) == sqlite_master(tmp_path / "alembic.db")
    db = SqliteDatabase(made)  # opened again: at head, nothing more to do
    try:
        assert [tuple(r) for r in db.all("select version_num from alembic_version")] == [(SCHEMA_HEAD,)]
        db.execute("insert into settings (name, value) values (?, ?)", "t", "x")
    finally:
        db.close()


def test_processes_that_make_a_new_sqlite_database_together_make_it_once(tmp_path: Path) -> None:
    path = tmp_path / "filekiln.db"
    code = f"from pathlib import Path; from localapi.core.db import SqliteDatabase; SqliteDatabase(Path({str(path)!r}))"
    starters = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for starter in starters:
        _, err = starter.communicate(timeout=60)
        assert starter.returncode == 0, err
    SqliteDatabase(tmp_path / "one.db").close()  # made by one process alone
    assert sqlite_master(path) == sqlite_master(tmp_path / "one.db")
    conn = sqlite3.connect(path)
    assert conn.execute("select version_num from alembic_version").fetchall() == [(SCHEMA_HEAD,)]
    conn.close()


def columns_sqlite(db: SqliteDatabase) -> dict[str, set[str]]:
    tables = [r[0] for r in db.all("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")]
    return {t: {r["name"] for r in db.all(f"pragma table_info({t})")} for t in tables}


def columns_postgres(db: PostgresDatabase) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in db.all("select table_name, column_name from information_schema.columns where table_schema = 'public'"):
        found.setdefault(row["table_name"], set()).add(row["column_name"])
    return found


def test_sqlite_and_postgresql_get_the_same_tables_and_columns(tmp_path: Path, postgres: PostgresServer) -> None:
    lite = SqliteDatabase(tmp_path / "filekiln.db")
    pg = PostgresDatabase(postgres.create_database())
    try:
        made = columns_sqlite(lite)
        assert made == columns_postgres(pg)
        assert {"keys", "files", "jobs", "job_events", "webhooks", "presets", "alembic_version"} <= set(made)
        assert pg.one("select version_num from alembic_version")[0] == SCHEMA_HEAD
        # timestamps keep their sub-second digits (double precision, not PostgreSQL's 4-byte real)
        pg.execute("insert into settings (name, value) values (?, ?)", "t", "x")
        pg.execute("insert into bells (id, host, port, kinds, updated_at) values (?, ?, ?, ?, ?)",
                   "b", "h", 1, "queue", 1764240000.123456)
        assert pg.one("select updated_at from bells")[0] == 1764240000.123456
    finally:
        pg.close()
        lite.close()


def test_a_second_open_finds_the_schema_made_and_changes_nothing(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    PostgresDatabase(url).close()
    again = PostgresDatabase(url)
    try:
        assert again.version == SCHEMA_HEAD
        assert again.all("select version_num from alembic_version") and len(
            again.all("select version_num from alembic_version")) == 1
    finally:
        again.close()


def before_migrations(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of the fixture data dir, its clock moved to now: every timestamp shifted by the time since
    it was made, so its files are as fresh (and their retention as far off) as on the day it was made."""
    data = tmp_path / "data"
    shutil.copytree(BEFORE, data, ignore=shutil.ignore_patterns("made.json"))
    conn = sqlite3.connect(data / "filekiln.db")
    with conn:
        shift = time.time() - conn.execute("select max(created_at) from jobs").fetchone()[0]
        for (table,) in conn.execute("select name from sqlite_master where type = 'table'").fetchall():
            stamps = [c[1] for c in conn.execute(f"pragma table_info({table})") if c[1].endswith("_at")]
            if stamps:
                moved = ", ".join(f"{c} = {c} + ?" for c in stamps)
                conn.execute(f"update {table} set {moved}", [shift] * len(stamps))
    conn.close()
    return data, json.loads((BEFORE / "made.json").read_text())


def test_the_fixture_was_made_before_migrations(tmp_path: Path) -> None:
    data, _ = before_migrations(tmp_path)
    conn = sqlite3.connect(data / "filekiln.db")
    tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    conn.close()
    assert "alembic_version" not in tables and {"keys", "files", "jobs"} <= tables


def test_a_data_dir_made_before_migrations_upgrades_in_place_with_its_keys_files_and_jobs(tmp_path: Path) -> None:
    data, made = before_migrations(tmp_path)
    srv = start_server(data, tmp_path / "server.log")
    try:
        with srv.client(made["secret"]) as c:
            usage = c.get("/usage")  # the key opens the door, with its quota
            assert usage.status_code == 200, usage.text
            assert usage.json()["dailyJobQuota"] == 50 and usage.json()["name"] == "before-migrations"
            job = c.get(f"/jobs/{made['job']}")  # the job it made, finished, with its tag
            assert job.status_code == 200, job.text
            assert job.json()["status"] == "DONE" and job.json()["tag"] == "old"
            result = c.get(f"/jobs/{made['job']}/result")
            assert result.status_code == 200
            (link,) = [f["downloadUrl"] for f in result.json()["files"]]
            webp = httpx.get(link if link.startswith("http") else f"http://127.0.0.1:{srv.port}{link}")
            assert webp.status_code == 200, webp.text
            assert webp.content[:4] == b"RIFF" and webp.content[8:12] == b"WEBP"
            assert c.get(f"/files/{made['file']}").json()["originalName"] == "blue.png"
            assert [h["url"] for h in c.get("/webhooks").json()["items"]] == ["http://127.0.0.1:9/hook"]
            # and the upgraded database takes new work
            ref = upload(c, "new.png", png_bytes())
            new = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"})
            assert wait_job(c, new.json()["id"])["status"] == "DONE"
            assert [j["id"] for j in c.get("/jobs", params={"tag": "old"}).json()["items"]] == [made["job"]]
    finally:
        srv.stop()
    db = SqliteDatabase(data / "filekiln.db")
    assert db.one("select version_num from alembic_version")[0] == SCHEMA_HEAD
    assert db.one("select count(*) from jobs")[0] == 2
    db.close()
