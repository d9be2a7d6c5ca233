"""Bring a metadata database to the schema this FileKiln needs, with Alembic (localapi/migrations).

Imported only when a database is new or older than :data:`localapi.core.db.SCHEMA_HEAD`; Alembic and
SQLAlchemy only when one is older, or is a new PostgreSQL database, so that an install already up to date,
and a first start on SQLite, start without them. A new SQLite database gets the statements of
``sqlite-head.sql`` instead, the schema Alembic's run leaves behind; ``python -m localapi.core.migrate``
writes that snapshot again after a migration is added, and tests/core/test_migrations.py checks it.
Processes that start together take turns: on SQLite the upgrade runs in one ``begin immediate``
transaction, on PostgreSQL under an advisory lock, and each finds the work done if another was first.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import tempfile
from pathlib import Path

MIGRATE_LOCK = 0x46_4B_4D  # "FKM"
SNAPSHOT = "sqlite-head.sql"


def scripts() -> Path:
    """The migrations folder: beside this package, or in the installed app's bundle."""
    bundle = getattr(sys, "_MEIPASS", None)
    here = Path(bundle) / "localapi" if bundle else Path(__file__).resolve().parents[1]
    return here / "migrations"


def upgrade(url: str, revision: str = "head") -> None:
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its plugin and step lines say nothing to a user
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

    sqlite = url.startswith("sqlite:")
    if not sqlite:
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    engine = create_engine(url, poolclass=NullPool)
    if sqlite:  # the driver's own transaction handling off, so that BEGIN IMMEDIATE takes the write lock first
        event.listen(engine, "connect", lambda dbapi, _record: setattr(dbapi, "isolation_level", None))
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("begin immediate"))
    config = Config()
    config.set_main_option("script_location", str(scripts()))
    try:
        with engine.begin() as connection:
            if not sqlite:
                connection.exec_driver_sql(f"select pg_advisory_xact_lock({MIGRATE_LOCK})")
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def sqlite_snapshot() -> tuple[str | None, list[str]]:
    """The revision ``sqlite-head.sql`` is of, and its statements in order; (None, []) without it."""
    try:
        text = (scripts() / SNAPSHOT).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, []
    revision: str | None = None
    statements: list[str] = []
    pending = ""
    for line in text.splitlines(keepends=True):
        if not pending and line.startswith("--"):
            if line.startswith("-- revision:"):
                revision = line.split(":", 1)[1].strip()
            continue
        if not pending and not line.strip():
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip().removesuffix(";"))
            pending = ""
    return revision, statements


def dump_sqlite_schema() -> str:
    """The text of ``sqlite-head.sql``: what Alembic's upgrade to head leaves in a new SQLite database's
    ``sqlite_master``: the tables, then the indexes, each by name (Alembic makes a table's indexes in no
    set order)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "head.db"
        upgrade(f"sqlite:///{path}")
        conn = sqlite3.connect(path)
        try:
            revision = conn.execute("select version_num from alembic_version").fetchone()[0]
            made = conn.execute("select sql from sqlite_master where sql is not null "
                                "and name not like 'sqlite%' order by type = 'index', name").fetchall()
        finally:
            conn.close()
    return ("-- A new SQLite metadata database at this revision is made with these statements, without Alembic\n"
            "-- (localapi/core/db.py). Written by `python -m localapi.core.migrate`; do not edit by hand.\n"
            f"-- revision: {revision}\n\n" + "".join(f"{sql};\n\n" for (sql,) in made))


if __name__ == "__main__":
    (scripts() / SNAPSHOT).write_text(dump_sqlite_schema(), encoding="utf-8")
    print(f"wrote {scripts() / SNAPSHOT}")
