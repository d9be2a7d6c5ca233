"""A real PostgreSQL server for tests: Debian's ``initdb`` and ``postgres`` on a free loopback port in a temp
dir, trust auth for the superuser ``filekiln``, and helpers that make a fresh database per test. PostgreSQL
refuses to run as root, so as root it runs as the ``postgres`` user. The session fixture ``postgres`` is
registered in tests/conftest.py."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

NOT_INSTALLED = "PostgreSQL is not installed here (apt-get install postgresql)"
SUPERUSER = "filekiln"
SYSTEM_USER = "postgres"  # whom Debian's package creates to run the server


def _version(bin_dir: str) -> tuple[int, ...]:
    """(15,) for /usr/lib/postgresql/15/bin: the highest version wins."""
    return tuple(int(part) for part in Path(bin_dir).parent.name.split(".") if part.isdigit())


def find_bin_dir() -> Path | None:
    """The directory with ``initdb`` and ``postgres``: the one on PATH, else Debian's newest."""
    on_path = shutil.which("initdb")
    candidates = [str(Path(on_path).resolve().parent)] if on_path else []
    candidates += sorted((str(Path(p).parent) for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
                         key=_version, reverse=True)
    return next((Path(d) for d in candidates if (Path(d) / "postgres").exists()), None)


BIN_DIR = find_bin_dir()
needs_postgres = pytest.mark.skipif(BIN_DIR is None, reason=NOT_INSTALLED)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """One PostgreSQL cluster of the test session's own, on 127.0.0.1 only; nothing it writes is synced."""

    bin_dir: Path
    port: int = 0
    workdir: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    databases: list[str] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "postgres.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.workdir and self.log_path.exists() else ""

    def _as_server_user(self) -> dict[str, Any]:
        """Popen arguments that drop root for the ``postgres`` user (initdb and postgres both refuse root)."""
        if os.geteuid() != 0:
            return {}
        try:
            user = pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            raise AssertionError(f"PostgreSQL refuses to run as root, and there is no {SYSTEM_USER!r} user "
                                 "to run it as (apt-get install postgresql creates one)") from None
        return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}

    def start(self, timeout: float = 60) -> None:
        """initdb into a fresh temp dir, start the server and wait until it takes connections."""
        drop = self._as_server_user()
        # not under pytest's tmp tree: that is 0700 root's, which the postgres user cannot enter
        self.workdir = Path(tempfile.mkdtemp(prefix="filekiln-postgres-"))
        if drop:
            os.chown(self.workdir, drop["user"], drop["group"])
        data = self.workdir / "data"
        init = subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--no-locale",
             "-E", "UTF8", "--no-sync"],
            cwd=self.workdir, capture_output=True, text=True, timeout=120, **drop)
        if init.returncode != 0:
            raise AssertionError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")
        self.port = free_port()
        settings = {"listen_addresses": "127.0.0.1", "port": self.port, "unix_socket_directories": self.workdir,
                    "max_connections": 300, "fsync": "off", "synchronous_commit": "off",
                    "full_page_writes": "off"}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(self.bin_dir / "postgres"), "-D", str(data),
                 *(arg for name, value in settings.items() for arg in ("-c", f"{name}={value}"))],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **drop)
        self._wait_for_connections(timeout)

    def _wait_for_connections(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"postgres exited ({self.process.returncode}):\n{self.log()[-3000:]}")
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError as e:
                if time.monotonic() > deadline:
                    raise AssertionError(f"postgres on port {self.port} did not take connections in {timeout} s "
                                         f"({e}):\n{self.log()[-3000:]}") from e
                time.sleep(0.05)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def _admin(self, statement: str, *names: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL(statement).format(*(sql.Identifier(name) for name in names)))

    def create_database(self, name: str | None = None, template: str | None = None) -> str:
        """A new database (named ``filekiln_<random>`` unless ``name`` is given), empty or a copy of
        ``template``; its URL."""
        name = name or f"filekiln_{uuid.uuid4().hex[:12]}"
        if template:
            self._admin("CREATE DATABASE {} TEMPLATE {}", name, template)
        else:
            self._admin("CREATE DATABASE {}", name)
        self.databases.append(name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop ``name``, ending any connection a test left open to it."""
        self._admin("DROP DATABASE IF EXISTS {} WITH (FORCE)", name)
        if name in self.databases:
            self.databases.remove(name)

    def stop(self) -> None:
        """Fast shutdown (killed if it takes over 30 s), then the temp dir goes."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # postgres' fast shutdown: ends sessions, no waiting for clients
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    if BIN_DIR is None:
        pytest.skip(NOT_INSTALLED)
    server = PostgresServer(BIN_DIR)
    try:
        server.start()
        yield server
    finally:
        server.stop()
