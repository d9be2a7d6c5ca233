"""The session's PostgreSQL server (tests/postgres.py): databases apart from each other, reachable on
loopback only."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest

from tests.postgres import PostgresServer, needs_postgres

pytestmark = needs_postgres


def listening_addresses(port: int) -> set[str]:
    """The local addresses the kernel has a listening TCP socket on for ``port`` (from /proc/net/tcp*)."""
    found = set()
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                # the kernel writes each 32-bit word in host order (little-endian here)
                raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, len(address), 8))
                found.add(socket.inet_ntop(family, raw))
    return found


def test_a_row_written_in_one_database_is_not_in_another(postgres: PostgresServer) -> None:
    first, second = postgres.create_database(), postgres.create_database()
    assert first != second
    with psycopg.connect(first) as conn:
        conn.execute("create table notes (body text)")
        conn.execute("insert into notes values ('only here')")
    with psycopg.connect(first) as conn:
        assert conn.execute("select body from notes").fetchall() == [("only here",)]
    with psycopg.connect(second) as conn:
        assert conn.execute("select to_regclass('notes')").fetchone() == (None,)
    for url in (first, second):
        postgres.drop_database(url.rsplit("/", 1)[1])


def test_the_server_listens_on_127_0_0_1_only(postgres: PostgresServer) -> None:
    with psycopg.connect(postgres.url()) as conn:
        assert conn.execute("show listen_addresses").fetchone() == ("127.0.0.1",)
    if not Path("/proc/net/tcp").exists():
        pytest.fail("no /proc/net/tcp to see the listening sockets in")
    assert listening_addresses(postgres.port) == {"127.0.0.1"}
    with pytest.raises(ConnectionRefusedError):  # another loopback address: nobody there
        socket.create_connection(("127.0.0.2", postgres.port), timeout=5).close()
