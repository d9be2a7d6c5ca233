"""Bring a metadata database to the schema this FileKiln needs, with Alembic (localapi/migrations).

Imported only when a database is new or older than :data:`localapi.core.db.SCHEMA_HEAD`, so that an
install already up to date starts without SQLAlchemy or Alembic. Processes that start together take turns:
on SQLite the upgrade runs in one ``begin immediate`` transaction, on PostgreSQL under an advisory lock, and
each finds the work done if another was first.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

MIGRATE_LOCK = 0x46_4B_4D  # "FKM"


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
