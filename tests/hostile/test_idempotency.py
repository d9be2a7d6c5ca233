"""Idempotency-Key under hostile conditions: names the server rewrites, and a server that stops in the
middle of a request and comes back."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import psutil
import pytest

from tests.conftest import Server, module_server, png_bytes, upload


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # claims marked every half second, not every 10 s: the heartbeat test sees a mark at once
    yield from module_server(tmp_path_factory, "idempotency", idempotency_heartbeat_seconds=0.5)


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client(server.create_key()) as c:
        yield c


@pytest.mark.parametrize("name", [".hidden.png", "dir/a.png", "..\\..\\a.png", "photo\u202egnp.png",
                                  "x" * 300 + ".png", "cafe\u0301.png"])
def test_a_retried_upload_whose_name_was_sanitised_is_replayed(client: httpx.Client, name: str) -> None:
    data = png_bytes()
    headers = {"Idempotency-Key": f"upload-{abs(hash(name))}"}
    first = client.post("/files", files={"file": (name, data)}, headers=headers)
    assert first.status_code == 201, first.text
    assert first.json()["originalName"] != name  # the server stored a safer name than the one sent
    again = client.post("/files", files={"file": (name, data)}, headers=headers)
    assert again.status_code == 201, again.text
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    other = client.post("/files", files={"file": (name, data + b"\0")}, headers=headers)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_mismatch"


# ---------------------------------------------------------------- a server that stops mid-request


def start_upload(srv: Server, key: str, idem_key: str) -> socket.socket:
    """An upload with ``idem_key`` that sends its headers and the first bytes of a 1 MB body, then stalls."""
    head = (b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n'
            b"Content-Type: image/png\r\n\r\n")
    request = (f"POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nX-API-Key: {key}\r\n"
               f"Idempotency-Key: {idem_key}\r\nContent-Type: multipart/form-data; boundary=b\r\n"
               f"Content-Length: {1024 * 1024}\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    sock.sendall(request + head[:50])
    db = srv.database()
    deadline = time.monotonic() + 60
    while db.one("select 1 from idempotency where idem_key = ? and state = 'in_flight'", idem_key) is None:
        assert time.monotonic() < deadline, "the upload never claimed its Idempotency-Key"
        time.sleep(0.05)
    return sock


@pytest.mark.backends
@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill-9"])
def test_a_key_in_flight_when_the_server_stopped_is_free_after_a_restart(server: Server, kill: bool) -> None:
    """The module's server is stopped in the middle of an upload and started again in place."""
    key = server.create_key()
    seen = len(server.log())
    sock = start_upload(server, key, "stopped-mid-upload")
    try:
        server.stop(kill=kill)
        answer = read_until_closed(sock)
    finally:
        sock.close()
    if not kill:  # a stopping server answers what it cuts off, and says when to come back
        assert answer.startswith(b"HTTP/1.1 503 ") and b'"code":"shutting_down"' in answer, answer
        assert b"retry-after: 5" in answer.lower()
    server.start_again()
    with server.client(key) as c:
        r = c.post("/files", files={"file": ("a.png", png_bytes())},
                   headers={"Idempotency-Key": "stopped-mid-upload"})
        assert r.status_code == 201, r.text  # not 409 idempotency_in_flight for the next 24 h
        assert "Idempotent-Replayed" not in r.headers
    text = server.log()[seen:]
    for sign in ("CancelledError", "Traceback", "internal_error", "unexpected error", '" 500'):
        assert sign not in text, text


def read_until_closed(sock: socket.socket) -> bytes:
    """Whatever the server sent before it closed the connection (nothing, when it was killed)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:  # reset by a killed server
        pass
    return received


def claim(srv: Server, key_id: str, idem_key: str, owner: str, heartbeat_age: float) -> None:
    """An in-flight claim as another server process on the same database leaves it."""
    db = srv.database()
    db.execute("insert into idempotency (key_id, idem_key, state, created_at, owner, heartbeat_at)"
               " values (?, ?, 'in_flight', ?, ?, ?)", key_id, idem_key, time.time() - 3600, owner,
               time.time() - heartbeat_age)


def key_id_of(srv: Server, secret: str) -> str:
    row = srv.database().one("select id from keys where prefix = ?", secret[:10])
    assert row is not None
    return str(row["id"])


def test_a_claim_of_another_machines_process_is_held_while_it_beats_and_taken_over_when_it_stops(
        server: Server) -> None:
    secret = server.create_key("other-machine")
    key_id = key_id_of(server, secret)
    claim(server, key_id, "beating", "elsewhere.example:4242:1700000000.000", heartbeat_age=5)
    claim(server, key_id, "silent", "elsewhere.example:4243:1700000000.000", heartbeat_age=120)
    with server.client(secret) as c:
        held = c.post("/files", files={"file": ("a.png", png_bytes())}, headers={"Idempotency-Key": "beating"})
        assert held.status_code == 409 and held.json()["code"] == "idempotency_in_flight"
        assert held.headers["Retry-After"] == "1"
        taken = c.post("/files", files={"file": ("a.png", png_bytes())}, headers={"Idempotency-Key": "silent"})
        assert taken.status_code == 201, taken.text


def test_a_claim_of_a_gone_process_on_this_machine_is_taken_over_at_once(server: Server) -> None:
    secret = server.create_key("gone")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    owner = f"{socket.gethostname()}:{dead.pid}:{psutil.Process().create_time():.3f}"
    claim(server, key_id_of(server, secret), "gone", owner, heartbeat_age=1)
    with server.client(secret) as c:
        r = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [upload(c, "a.png", png_bytes())["id"]]},
                   headers={"Idempotency-Key": "gone"})
        assert r.status_code == 201, r.text


@pytest.mark.backends
def test_a_long_request_keeps_its_claim_alive(server: Server) -> None:
    """The heartbeat: a stalled upload's claim is marked again while the server runs, so that no other
    process takes it over."""
    secret = server.create_key("long")
    sock = start_upload(server, secret, "long-upload")
    try:
        db = server.database()
        first = db.one("select heartbeat_at from idempotency where idem_key = 'long-upload'")
        assert first is not None
        deadline = time.monotonic() + 60
        while True:
            row = db.one("select heartbeat_at from idempotency where idem_key = 'long-upload'")
            if row is not None and row["heartbeat_at"] > first["heartbeat_at"]:
                break
            assert time.monotonic() < deadline, "the claim was never marked again"
            time.sleep(0.5)
    finally:
        sock.close()
