"""The metadata database: SQLite in the data dir (the embedded default), or PostgreSQL (``database_url``).

Statements are written once, in the SQL both databases speak, with ``?`` placeholders; the schema is
Alembic's (``localapi/migrations``), applied as a database is opened. SQLite runs in WAL mode with one
connection per thread and lets one writer in at a time; on PostgreSQL every writing transaction takes one
advisory lock, so writes keep the same order on both (an event's ``seq`` is never committed after a
later one's), and connections come from a small pool.
"""

from __future__ import annotations

import functools
import secrets
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from localapi.config import SettingError
from localapi.core.errors import BadRequest

if TYPE_CHECKING:
    from localapi.config import Settings

# the newest migration in localapi/migrations/versions: a database already there is opened without Alembic
SCHEMA_HEAD = "0002_preset_owner"
# the advisory lock every writing transaction on PostgreSQL holds (SQLite's one writer at a time)
WRITE_LOCK = 0x46_4B_57  # "FKW"
PING_AFTER = 10.0  # seconds a pooled PostgreSQL connection may rest before it is checked as it is taken


class Row(Protocol):
    """A result row, by column name or position (sqlite3.Row, or PgRow)."""

    def __getitem__(self, key: str | int, /) -> Any: ...
    def keys(self) -> list[str]: ...


class Connection(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...


class DatabaseError(SettingError):
    """The database cannot be used as configured; the message says why in words, never with the password."""


def new_id(prefix: str) -> str:
    """``prefix_`` + 128 random bits, URL-safe."""
    return f"{prefix}_{uuid.UUID(bytes=secrets.token_bytes(16)).hex}"


def now() -> float:
    return time.time()


class Database:
    """What every part of FileKiln asks of the metadata database, whichever it is."""

    kind = ""
    target = ""  # where it is, for /health and doctor: a path, or a URL without its password

    def transaction(self) -> Any:  # a context manager yielding a Connection
        raise NotImplementedError

    def reading(self) -> Any:  # a context manager yielding a Connection for a few reads in a row
        raise NotImplementedError

    def one(self, sql: str, *args: Any) -> Any:
        raise NotImplementedError

    def all(self, sql: str, *args: Any) -> list[Any]:
        raise NotImplementedError

    def execute(self, sql: str, *args: Any) -> int:
        """One writing statement, committed on its own (or part of this thread's open transaction)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Its state for ``GET /health`` and doctor: kind, target, ``ok``, and ``error`` in words."""
        try:
            self.one("select 1")
        except Exception as exc:
            return {"kind": self.kind, "target": self.target, "ok": False, "error": _reason(exc)}
        return {"kind": self.kind, "target": self.target, "ok": True, "error": None}

    def get_setting(self, name: str, default: str | None = None) -> str | None:
        row = self.one("select value from settings where name = ?", name)
        return row["value"] if row else default

    def get_settings(self, *names: str) -> dict[str, str]:
        """The stored values of ``names`` (those stored), in one read."""
        rows = self.all(f"select name, value from settings where name in ({', '.join('?' * len(names))})", *names)
        return {row["name"]: row["value"] for row in rows}

    def set_setting(self, name: str, value: str) -> None:
        self.execute(
            "insert into settings (name, value) values (?, ?) "
            "on conflict (name) do update set value = excluded.value",
            name, value,
        )

    def setting_once(self, name: str, make: str) -> str:
        """Store ``make`` under ``name`` unless a value is there already; return the stored one."""
        self.execute("insert into settings (name, value) values (?, ?) on conflict do nothing", name, make)
        value = self.get_setting(name)
        assert value is not None
        return value


def open_database(settings: Settings, migrate: bool = True) -> Database:
    """The database ``settings`` name: ``database_url``, else ``filekiln.db`` in the data dir; brought to
    this release's schema unless ``migrate`` is False (PostgreSQL only: doctor looks without changing)."""
    url = settings.database_url.strip()
    if not url:
        from localapi.core.datadir import private_now

        path = settings.data_dir / "filekiln.db"
        private_now(settings.data_dir)  # before the file is made: a command may create the data dir here
        db = SqliteDatabase(path)
        # the files just made with the process's umask (the CLI's is the user's usual one)
        private_now(settings.data_dir, path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
        return db
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        return PostgresDatabase(url, migrate=migrate)
    from localapi.core.urls import redacted

    raise DatabaseError(f"database_url {redacted(url)!r} is not a database FileKiln can use: leave it empty for "
                        "the data dir's SQLite file, or give postgresql://user:password@host:port/database.")


class SqliteDatabase(Database):
    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.target = str(path)
        self._local = threading.local()
        # SQLite lets one writer in at a time and makes the others sleep and retry (1, 2, 5 ms ...);
        # this process's writers queue here instead and go in the moment the one before is done.
        # Re-entrant: a write inside a transaction on the same thread is part of that transaction.
        self._writing = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        if _version(self.connect()) != SCHEMA_HEAD and not self._create_from_snapshot():
            from localapi.core.migrate import upgrade

            upgrade(f"sqlite:///{path}")

    def _create_from_snapshot(self) -> bool:
        """A new database gets the schema at :data:`SCHEMA_HEAD` from the snapshot beside the migrations
        (``sqlite-head.sql``, the statements Alembic's run leaves in ``sqlite_master``), so that a first
        start does without SQLAlchemy and Alembic. False when the database is not new, or the snapshot is
        of another revision: then Alembic upgrades it. Processes that start together take turns under the
        write lock; the one that comes second finds the tables there and the revision at head."""
        from localapi.core.migrate import sqlite_snapshot

        revision, statements = sqlite_snapshot()
        if revision != SCHEMA_HEAD:
            return False
        with self.transaction() as conn:
            if conn.execute("select count(*) from sqlite_master").fetchone()[0]:
                return _version(conn) == SCHEMA_HEAD
            for statement in statements:
                conn.execute(statement)
            conn.execute("insert into alembic_version (version_num) values (?)", (SCHEMA_HEAD,))
        return True

    def connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("pragma journal_mode=wal")
            conn.execute("pragma synchronous=normal")
            conn.execute("pragma busy_timeout=30000")
            conn.execute("pragma foreign_keys=on")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locking) transaction."""
        conn = self.connect()
        with self._writing:
            conn.execute("begin immediate")
            try:
                yield conn
            except BaseException:
                conn.execute("rollback")
                raise
            conn.execute("commit")

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        yield self.connect()

    def one(self, sql: str, *args: Any) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.connect().execute(sql, args).fetchone()
        return row

    def all(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        return list(self.connect().execute(sql, args).fetchall())

    def execute(self, sql: str, *args: Any) -> int:
        with self._writing:
            return self.connect().execute(sql, args).rowcount

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def _version(conn: sqlite3.Connection) -> str | None:
    """The Alembic revision a SQLite database is at; None for a new one or one made before migrations."""
    try:
        row = conn.execute("select version_num from alembic_version").fetchone()
    except sqlite3.OperationalError:  # no such table
        return None
    return row[0] if row else None


class PgRow:
    """A PostgreSQL row read by column name or position, like sqlite3.Row."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: str | int) -> Any:
        return self._values[key if isinstance(key, int) else self._index[key]]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._index, self._values, strict=True))!r})"


def _pg_rows(cursor: Any) -> Any:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return functools.partial(PgRow, index)


@functools.lru_cache(maxsize=1024)
def _pg_sql(sql: str) -> str:
    """A statement with psycopg's placeholders: ``?`` becomes ``%s`` (and a literal ``%`` doubles)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _NoRows:
    """The answer of a read no row can match."""

    rowcount = 0

    def fetchone(self) -> None:
        return None

    def fetchall(self) -> list[Any]:
        return []

    def __iter__(self) -> Iterator[Any]:
        return iter(())


class PgConnection:
    """A pooled psycopg connection that takes statements as the rest of FileKiln writes them."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        if any(isinstance(p, str) and "\x00" in p for p in parameters):
            # PostgreSQL's text cannot hold NUL, so no stored value has one: a read finds nothing (an id
            # with NUL in a URL is not found, as on SQLite), and a write is refused in words
            if sql.lstrip()[:6].lower() == "select":
                return _NoRows()
            raise BadRequest("Text with a NUL character (\\0) cannot be stored.")
        return self.raw.execute(_pg_sql(sql), parameters)


class PostgresDatabase(Database):
    kind = "postgresql"

    def __init__(self, url: str, pool_size: int = 4, max_overflow: int = 28, migrate: bool = True) -> None:
        from localapi.core.urls import redacted

        self.url = url
        self.target = redacted(url)
        self._local = threading.local()
        self._engine = _pg_engine(url, pool_size, max_overflow)
        try:
            with self.reading() as conn:
                known = conn.execute("select to_regclass('alembic_version') is not null").fetchone()[0]
                version = conn.execute("select version_num from alembic_version").fetchone() if known else None
        except Exception as exc:  # psycopg's or the pool's: refused, unknown host, wrong password ...
            self._engine.dispose()
            raise DatabaseError(f"The database at {self.target} cannot be reached: {_reason(exc)}") from None
        self.version = version[0] if version else None
        if migrate and self.version != SCHEMA_HEAD:
            from localapi.core.migrate import upgrade

            upgrade(url)
            self.version = SCHEMA_HEAD

    def _checkout(self) -> Any:
        """A connection from the pool; one unused for a while is asked first whether it still works (the
        server may have restarted), and replaced if not. A connection in steady use is not asked."""
        fairy = self._engine.raw_connection()
        if time.monotonic() - fairy.info.get("used", 0.0) > PING_AFTER:
            try:
                fairy.driver_connection.execute("select 1")
            except Exception:
                fairy.invalidate()
                fairy.close()
                fairy = self._engine.raw_connection()
        fairy.info["used"] = time.monotonic()
        return fairy

    @contextmanager
    def _borrowed(self) -> Iterator[PgConnection]:
        held: PgConnection | None = getattr(self._local, "conn", None)
        if held is not None:  # this thread's open transaction
            yield held
            return
        fairy = self._checkout()
        try:
            yield PgConnection(fairy.driver_connection)
        except Exception:
            _drop_if_broken(fairy)
            raise
        finally:
            fairy.close()  # back to the pool

    @contextmanager
    def transaction(self) -> Iterator[PgConnection]:
        if getattr(self._local, "conn", None) is not None:
            raise DatabaseError("a transaction is open on this thread already")
        fairy = self._checkout()
        conn = PgConnection(fairy.driver_connection)
        try:
            with conn.raw.transaction():
                conn.execute("select pg_advisory_xact_lock(?)", (WRITE_LOCK,))
                self._local.conn = conn
                try:
                    yield conn
                finally:
                    self._local.conn = None
        except Exception:
            _drop_if_broken(fairy)
            raise
        finally:
            fairy.close()

    reading = _borrowed

    def one(self, sql: str, *args: Any) -> Any:
        with self._borrowed() as conn:
            return conn.execute(sql, args).fetchone()

    def all(self, sql: str, *args: Any) -> list[Any]:
        with self._borrowed() as conn:
            return list(conn.execute(sql, args).fetchall())

    def execute(self, sql: str, *args: Any) -> int:
        held: PgConnection | None = getattr(self._local, "conn", None)
        if held is not None:
            return int(held.execute(sql, args).rowcount)
        with self.transaction() as conn:
            return int(conn.execute(sql, args).rowcount)

    def close(self) -> None:
        self._engine.dispose()


def _pg_engine(url: str, pool_size: int, max_overflow: int) -> Any:
    """SQLAlchemy's pool of psycopg connections, each in autocommit (transactions are begun explicitly),
    with FileKiln's rows and Python's bools stored as the 0/1 integers the schema has."""
    try:
        import psycopg
        from psycopg.types.numeric import IntDumper
        from sqlalchemy import create_engine, event
    except ImportError as exc:
        raise DatabaseError(f"database_url names PostgreSQL, but {exc.name} is not installed: "
                            "install FileKiln with its [scale] extra (pip install 'filekiln[scale]').") from None
    parts = urlsplit(url)
    engine = create_engine(parts._replace(scheme="postgresql+psycopg").geturl(), pool_size=pool_size,
                           max_overflow=max_overflow, pool_timeout=60)

    @event.listens_for(engine, "connect")
    def configure(dbapi_connection: psycopg.Connection[Any], _record: Any) -> None:
        dbapi_connection.autocommit = True
        dbapi_connection.row_factory = _pg_rows
        dbapi_connection.adapters.register_dumper(bool, IntDumper)

    return engine


def _drop_if_broken(fairy: Any) -> None:
    """Keep a connection that lost its server (a restart, a network cut) out of the pool: the next
    statement gets a new one instead of the same error."""
    raw = fairy.driver_connection
    if raw is None or raw.closed or getattr(raw, "broken", False):
        fairy.invalidate()


def _reason(exc: BaseException) -> str:
    """What stopped a connection, in words: the server's own sentence without the connection details."""
    inner = getattr(exc, "orig", None) or exc
    text = str(inner).strip().splitlines()[0] if str(inner).strip() else type(inner).__name__
    return text.split(": ", 1)[-1] if text.startswith("connection") else text
