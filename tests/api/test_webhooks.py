"""Webhooks through a real server and real HTTP receivers on loopback ports: signatures, retries,
410, redirects, timeouts, target checks, and delivery after a kill -9."""

from __future__ import annotations

import hashlib
import hmac
import json
import select
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from localapi.core.webhooks import TargetPolicy, TargetRefused
from tests.conftest import (
    ROOT,
    Server,
    assert_problem,
    free_port,
    install_db,
    png_bytes,
    process_env,
    start_server,
    upload,
    wait_job,
    write_settings,
)

FAST = {"webhook_retry_seconds": [0.2, 0.4, 0.4, 0.4, 0.4], "webhook_timeout_seconds": 1.0}
HANG = "hang"  # an answer: accept the request and never reply
TRICKLE = "trickle"  # an answer: a header that never ends, a byte every 0.3 s


@dataclass
class Hit:
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def event(self) -> str:
        return str(json.loads(self.body)["event"])

    @property
    def event_id(self) -> str:
        return self.headers["filekiln-event-id"]


class Receiver:
    """An HTTP server on a loopback port that records every POST and answers as ``answer(n)`` says."""

    def __init__(self, answer: Callable[[int], int | str | tuple[int, dict[str, str]]] = lambda n: 200,
                 port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self.hits: list[Hit] = []
        self.changed = threading.Condition()
        self.released = threading.Event()  # ends the hanging requests
        self.disconnected: list[float] = []  # when clients of hanging requests closed their connection
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.changed:
                    n = len(receiver.hits)
                    receiver.hits.append(Hit({k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()))
                    receiver.changed.notify_all()
                reply = answer(n)
                if reply == HANG:
                    receiver.hang(self.connection)
                    return
                if reply == TRICKLE:
                    receiver.trickle(self.connection)
                    return
                status, headers = reply if isinstance(reply, tuple) else (reply, {})
                self.send_response(int(status))
                for name, value in {**headers, "Content-Length": "0"}.items():
                    self.send_header(name, value)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        if tls is not None:  # HTTPS: the handshake comes with each accept, and one refused drops that client
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hang(self, conn: socket.socket) -> None:
        while not self.released.is_set():
            if select.select([conn], [], [], 0.05)[0] and conn.recv(1, socket.MSG_PEEK) == b"":
                with self.changed:
                    self.disconnected.append(time.monotonic())
                    self.changed.notify_all()
                return

    def trickle(self, conn: socket.socket) -> None:
        """Answer so slowly that no single read waits long: a status line, then a header a byte at a time."""
        try:
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not self.released.wait(0.3):
                conn.sendall(b"a")
        except OSError:  # the client gave up and closed the connection
            with self.changed:
                self.disconnected.append(time.monotonic())
                self.changed.notify_all()

    def wait_for(self, check: Callable[[list[Hit]], bool], timeout: float = 30) -> list[Hit]:
        with self.changed:
            assert self.changed.wait_for(lambda: check(self.hits), timeout), f"receiver got {self.hits}"
            return list(self.hits)

    def wait_events(self, *events: str, timeout: float = 30) -> list[Hit]:
        return self.wait_for(lambda hits: all(any(h.event == e for h in hits) for e in events), timeout)

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(*args: Any, **kw: Any) -> Receiver:
        made.append(Receiver(*args, **kw))
        return made[-1]

    yield make
    for r in made:
        r.close()


def fast_server(root: Path, api_only: bool = False, **settings: Any) -> Server:
    """A server whose webhooks retry within a second and give up on a silent target after one."""
    (root / "data").mkdir(exist_ok=True)
    write_settings(root / "data", **{**FAST, **settings})
    return start_server(root / "data", root / "server.log", *(["--workers", "0"] if api_only else []))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = fast_server(tmp_path_factory.mktemp("webhooks"))
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client(server.create_key("webhooks")) as c:  # a key per test: hooks of one test see no other's jobs
        yield c


def hook(client: httpx.Client, url: str, events: list[str] | None = None) -> dict[str, Any]:
    r = client.post("/webhooks", json={"url": url, "events": events or ["job.done"]})
    assert r.status_code == 201, r.text
    return dict(r.json())


def run_job(client: httpx.Client, **extra: Any) -> dict[str, Any]:
    ref = upload(client, "a.png", png_bytes())
    r = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp",
                                   **extra})
    assert r.status_code == 201, r.text
    return wait_job(client, r.json()["id"])


def verify(secret: str, hit: Hit, tolerance: float = 300) -> None:
    """What a receiver does (docs/api.md, Webhooks)."""
    parts = dict(p.split("=", 1) for p in hit.headers["filekiln-signature"].split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + hit.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, parts["v1"]), "signature does not match the raw body"
    assert abs(time.time() - int(parts["t"])) < tolerance


# ---- the hooks themselves ----

def test_hooks_are_listed_without_secret_and_only_to_their_key(server: Server, client: httpx.Client) -> None:
    made = hook(client, "http://127.0.0.1:9/a", ["job.created", "job.done", "job.failed", "job.canceled"])
    assert made["id"].startswith("wh_") and made["secret"].startswith("whsec_") and made["createdAt"]
    listed = client.get("/webhooks").json()["items"]
    assert listed == [{k: v for k, v in made.items() if k != "secret"} | {"disabledAt": None}]
    with server.client(server.create_key("other")) as other:
        assert other.get("/webhooks").json()["items"] == []
        assert_problem(other.delete(f"/webhooks/{made['id']}"), 404, "webhook_not_found")
    assert client.delete(f"/webhooks/{made['id']}").status_code == 204
    assert client.get("/webhooks").json()["items"] == []
    assert_problem(client.delete(f"/webhooks/{made['id']}"), 404, "webhook_not_found")


@pytest.mark.parametrize("events", [["job.progress"], ["job.done", "job.queued"], []])
def test_events_other_than_the_four_are_422_naming_the_field(client: httpx.Client, events: list[str]) -> None:
    body = assert_problem(client.post("/webhooks", json={"url": "http://127.0.0.1:9/", "events": events}),
                          422, "invalid_params")
    assert any(field.startswith("events") for field in body["errors"]), body


# URLs no delivery could go to: a port out of range or not a number, broken brackets (each URL parser
# lets some through), and a user name with a password, which would be logged and sent on as written
UNDELIVERABLE = ["http://127.0.0.1:99999/", "http://127.0.0.1:abc/", "http://127.0.0.1:-1/", "http://127.0.0.1:0/",
                 "http://localhost:80:80/", "http://[::1]x/", "http://[::1/", "http://]/", "http://[127.0.0.1]/",
                 "http://user:S3cret@127.0.0.1:9/"]


@pytest.mark.parametrize("url", ["http://192.168.1.10/hook", "http://10.0.0.1:8080/", "http://example.com/",
                                 "http://localhost.example.com/", "http://[fe80::1]/", "ftp://127.0.0.1/",
                                 "file:///etc/passwd", "http:///nohost", *UNDELIVERABLE])
def test_targets_beyond_loopback_are_refused(client: httpx.Client, url: str) -> None:
    answer = client.post("/webhooks", json={"url": url, "events": ["job.done"]})
    body = assert_problem(answer, 422, "webhook_target_not_allowed")
    assert list(body["errors"]) == ["url"] and "S3cret" not in answer.text
    ref = upload(client, "a.png", png_bytes())
    body = assert_problem(client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                     "webhookUrl": url}), 422, "webhook_target_not_allowed")
    assert list(body["errors"]) == ["webhookUrl"]


def test_hooks_stored_before_their_urls_were_refused_end_failed_without_a_trace(server: Server,
                                                                               client: httpx.Client) -> None:
    """Hooks made before such URLs were refused at creation: their deliveries end ``failed`` within the
    retry schedule, instead of staying pending with a traceback in the log at every sweep, and the
    password of a URL is never logged."""
    seen = len(server.log())
    db = server.database()
    key_id = db.one("select id from keys where prefix = ?", client.headers["X-API-Key"][:10])["id"]
    for n, url in enumerate(UNDELIVERABLE):
        db.execute("insert into webhooks (id, key_id, url, events, secret, created_at) values (?, ?, ?, ?, ?, ?)",
                   f"wh_stored{n}", key_id, url, '["job.done"]', "a-secret", time.time() - 60)
    job = run_job(client)
    mine = f"job_id = '{job['id']}'"
    wait_until(lambda: len(outbox(server.data_dir, mine)) == len(UNDELIVERABLE)
               and all(row["status"] == "failed" for row in outbox(server.data_dir, mine)))
    log = server.log()[seen:]
    assert "Traceback" not in log and "S3cret" not in log, log


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/", "http://127.5.6.7/", "http://localhost:1/x",
                                 "http://[::1]:9/", "https://localhost/"])
def test_loopback_targets_are_taken(client: httpx.Client, url: str) -> None:
    hook(client, url)


def test_listed_hosts_and_networks_are_allowed(tmp_path: Path) -> None:
    srv = fast_server(tmp_path, webhook_allowed_hosts=["hooks.example.com", "192.168.1.10", "10.1.0.0/16"])
    try:
        with srv.client(srv.create_key()) as c:
            for url in ("http://hooks.example.com/x", "https://192.168.1.10/", "http://10.1.200.3:8080/"):
                hook(c, url)
            assert_problem(c.post("/webhooks", json={"url": "http://10.2.0.1/", "events": ["job.done"]}),
                           422, "webhook_target_not_allowed")
    finally:
        srv.stop()


def test_a_name_that_resolves_beyond_what_is_allowed_is_refused_at_delivery(monkeypatch: pytest.MonkeyPatch) -> None:
    # DNS rebinding: the URL passed the check as written, the answer at delivery time points elsewhere
    answers = {"localhost": "192.168.1.5", "hooks.example.com": "10.9.9.9", "inside.example.com": "10.1.2.3"}
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, **kw: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))])
    policy = TargetPolicy(["hooks.example.com", "10.1.0.0/16"])
    with pytest.raises(TargetRefused):
        policy.resolve("http://localhost/hook")
    assert policy.resolve("http://hooks.example.com/") == "10.9.9.9"  # a listed name is trusted
    with pytest.raises(TargetRefused):  # a name nobody listed is refused as written, whatever it resolves to
        policy.resolve("http://inside.example.com/")


# ---- deliveries ----

@pytest.mark.backends
def test_a_delivery_is_signed_over_its_raw_body_and_carries_the_job(client: httpx.Client, receivers: Any) -> None:
    receiver = receivers()
    made = hook(client, receiver.url, ["job.created", "job.done"])
    job = run_job(client)
    # deliveries go out four at a time, so they may arrive in either order (docs/api.md says so)
    hits = sorted(receiver.wait_events("job.created", "job.done"), key=lambda h: h.event != "job.created")
    assert [h.event for h in hits] == ["job.created", "job.done"]
    for h in hits:
        verify(made["secret"], h)
        assert h.headers["content-type"] == "application/json"
        assert h.headers["user-agent"].startswith("FileKiln/")
        assert h.event_id.startswith("evt_")
        assert set(json.loads(h.body)) == {"event", "job", "createdAt"}
    assert hits[0].event_id != hits[1].event_id
    assert json.loads(hits[1].body)["job"] == client.get(f"/jobs/{job['id']}").json()
    assert json.loads(hits[0].body)["job"]["status"] == "QUEUED"
    tampered = Hit(hits[1].headers, hits[1].body.replace(b"DONE", b"FAILED"), 0)
    with pytest.raises(AssertionError, match="signature"):
        verify(made["secret"], tampered)


def test_a_jobs_webhook_url_gets_its_four_events_signed_with_the_key_job_secret(client: httpx.Client,
                                                                                  receivers: Any) -> None:
    receiver = receivers()
    secret = client.get("/webhooks/job-secret").json()["secret"]
    assert client.get("/webhooks/job-secret").json()["secret"] == secret  # the same until rotated
    job = run_job(client, webhookUrl=receiver.url)
    hits = receiver.wait_events("job.created", "job.done")
    for h in hits:
        verify(secret, h)
        assert json.loads(h.body)["job"]["id"] == job["id"]
    rotated = client.post("/webhooks/job-secret")
    assert rotated.status_code == 201 and rotated.json()["secret"] != secret
    run_job(client, webhookUrl=receiver.url)
    hits = receiver.wait_for(lambda hits: len(hits) >= 4)
    verify(rotated.json()["secret"], hits[-1])


@pytest.mark.backends
def test_a_failing_target_gets_the_event_again_with_the_same_id(server: Server, client: httpx.Client,
                                                                 receivers: Any) -> None:
    receiver = receivers(lambda n: 500 if n < 2 else 200)
    made = hook(client, receiver.url)
    run_job(client)
    [first, *_] = receiver.wait_for(lambda hits: len(hits) >= 1)
    row = after_first_attempt(server.data_dir, first)
    # the 500 did not end the delivery: it waits for its next attempt, or a later one delivered it
    assert row["status"] == "pending" or row["attempts"] > 1, dict(row)
    hits = receiver.wait_for(lambda hits: len(hits) >= 3)
    assert [h.event for h in hits] == ["job.done"] * 3
    assert len({h.event_id for h in hits}) == 1
    for h in hits:
        verify(made["secret"], h)
    assert hits[2].at - hits[1].at >= 0.35  # the schedule: 0.2 s, then 0.4 s


@pytest.mark.backends
def test_a_target_answering_410_is_disabled(server: Server, client: httpx.Client, receivers: Any) -> None:
    gone, other = receivers(lambda n: 410), receivers()
    made = hook(client, gone.url)
    hook(client, other.url)
    first = run_job(client)
    [hit] = gone.wait_for(lambda hits: len(hits) == 1)
    row = after_first_attempt(server.data_dir, hit)
    assert (row["status"], row["last_status"]) == ("dropped", 410), dict(row)
    # the hook is disabled in the same change that records the 410
    hooks = {h["id"]: h for h in client.get("/webhooks").json()["items"]}
    assert hooks[made["id"]]["disabledAt"] is not None, hooks
    second = run_job(client)
    other.wait_for(lambda hits: {json.loads(h.body)["job"]["id"] for h in hits} == {first["id"], second["id"]})
    assert len(gone.hits) == 1


def test_a_redirect_is_not_followed(server: Server, client: httpx.Client, receivers: Any) -> None:
    elsewhere = receivers()
    redirecting = receivers(lambda n: (307, {"Location": elsewhere.url}))
    hook(client, redirecting.url)
    run_job(client)
    [first, *_] = redirecting.wait_for(lambda hits: len(hits) >= 1)
    row = after_first_attempt(server.data_dir, first)
    assert row["last_status"] == 307 and row["status"] != "delivered", dict(row)
    assert elsewhere.hits == []
    hits = redirecting.wait_for(lambda hits: len(hits) >= 2)  # a 3xx is a failure: tried again, not followed
    assert hits[0].event_id == hits[1].event_id
    assert elsewhere.hits == []


def test_a_hanging_target_is_cut_at_the_timeout(server: Server, client: httpx.Client, receivers: Any) -> None:
    receiver = receivers(lambda n: HANG if n == 0 else 200)
    hook(client, receiver.url)
    run_job(client)
    hits = receiver.wait_for(lambda hits: len(hits) >= 2, timeout=20)
    assert receiver.disconnected, "FileKiln kept the hanging connection open"
    assert hits[1].event_id == hits[0].event_id  # the same event, tried again
    # what FileKiln recorded of the first attempt: cut by its own timeout (webhook_timeout_seconds = 1),
    # not by the receiver or a network error; the second attempt delivered it
    wait_until(lambda: delivery(server.data_dir, hits[0].event_id)["status"] == "delivered")
    row = delivery(server.data_dir, hits[0].event_id)
    assert (row["attempts"], row["last_status"], row["last_error"]) == (2, 200, "no answer within 1 s")


def test_a_target_that_trickles_its_answer_is_cut_at_the_deadline(server: Server, client: httpx.Client,
                                                                   receivers: Any) -> None:
    """A byte every 0.3 s never trips a timeout per read (1 s here): the attempt's total deadline does."""
    receiver = receivers(lambda n: TRICKLE if n == 0 else 200)
    hook(client, receiver.url)
    run_job(client)
    hits = receiver.wait_for(lambda hits: len(hits) >= 2, timeout=20)
    assert hits[1].event_id == hits[0].event_id
    wait_until(lambda: bool(receiver.disconnected), timeout=10)  # its next byte finds the connection closed
    wait_until(lambda: delivery(server.data_dir, hits[0].event_id)["status"] == "delivered")
    assert delivery(server.data_dir, hits[0].event_id)["last_error"] == "no answer within 1 s"


def test_a_key_may_have_twenty_hooks(server: Server) -> None:
    with server.client(server.create_key("many hooks")) as c:
        made = [hook(c, f"http://127.0.0.1:9/{n}") for n in range(20)]
        assert_problem(c.post("/webhooks", json={"url": "http://127.0.0.1:9/21", "events": ["job.done"]}), 409,
                       "too_many_webhooks")
        assert c.delete(f"/webhooks/{made[0]['id']}").status_code == 204
        hook(c, "http://127.0.0.1:9/21")  # room again


def self_signed_tls(folder: Path) -> ssl.SSLContext:
    """A server context whose certificate names 127.0.0.1 but is signed by nobody a client trusts."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context


def test_an_https_target_whose_certificate_nobody_vouches_for_gets_nothing(server: Server, client: httpx.Client,
                                                                           receivers: Any, tmp_path: Path) -> None:
    """Deliveries verify the target's certificate (one TLS context serves them all; each is checked)."""
    receiver = receivers(tls=self_signed_tls(tmp_path))
    hook(client, receiver.url)
    job = run_job(client)
    rows: list[Any] = []

    def attempted() -> bool:
        rows[:] = outbox(server.data_dir, "job_id = ? and event_type = ?", job["id"], "job.done")
        # two attempts (the shared context used again), or an end: a delivery is what must not happen
        return bool(rows) and (rows[0]["attempts"] >= 2 or rows[0]["status"] != "pending")
    wait_until(attempted)
    assert "certificate" in (rows[0]["last_error"] or "").lower(), dict(rows[0])
    assert receiver.hits == []


# ---- at least once, across a kill -9 ----

def outbox(data_dir: Path, where: str, *args: Any) -> list[Any]:
    """The outbox rows (``webhook_deliveries``) that match ``where``."""
    db = install_db(data_dir)
    try:
        return db.all(f"select * from webhook_deliveries where {where}", *args)
    finally:
        db.close()


def deliveries(data_dir: Path, event: str) -> list[Any]:
    return outbox(data_dir, "event_type = ?", event)


def delivery(data_dir: Path, event_id: str) -> Any:
    return outbox(data_dir, "id = ?", event_id)[0]


def after_first_attempt(data_dir: Path, hit: Hit) -> Any:
    """The delivery ``hit`` is an attempt of, once FileKiln has recorded how its first attempt went (the
    receiver has the request a moment before FileKiln has the answer)."""
    def recorded() -> bool:
        row = delivery(data_dir, hit.event_id)
        return bool(row["attempts"] >= 1 or row["status"] != "pending")

    wait_until(recorded)
    return delivery(data_dir, hit.event_id)


def wait_until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_an_event_not_delivered_before_a_kill_is_delivered_after_restart(tmp_path: Path, receivers: Any) -> None:
    port = free_port()  # the receiver is down at first: connections are refused
    srv = fast_server(tmp_path, webhook_retry_seconds=[1.0] * 5)
    key = srv.create_key()
    with srv.client(key) as c:
        made = hook(c, f"http://127.0.0.1:{port}/hook")
        job = run_job(c)
    wait_until(lambda: any(d["attempts"] >= 1 for d in deliveries(srv.data_dir, "job.done")))
    srv.stop(kill=True)
    receiver = receivers(port=port)
    srv = start_server(srv.data_dir, tmp_path / "server2.log")
    try:
        hits = receiver.wait_events("job.done")
        assert json.loads(hits[0].body)["job"]["id"] == job["id"]
        verify(made["secret"], hits[0])
    finally:
        srv.stop()


@pytest.mark.backends
def test_events_recorded_while_the_server_was_down_are_delivered_after_restart(tmp_path: Path,
                                                                               receivers: Any) -> None:
    receiver = receivers()
    srv = fast_server(tmp_path, api_only=True)  # --workers 0: a `filekiln worker` runs the job later
    with srv.client(srv.create_key()) as c:
        made = hook(c, receiver.url)
        ref = upload(c, "a.png", png_bytes())
        job = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    srv.stop(kill=True)
    worker = subprocess.Popen([sys.executable, "-m", "filekiln", "worker", "--data-dir", str(srv.data_dir)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=process_env(srv.data_dir))
    db = srv.database()
    try:
        def done() -> bool:
            return bool(db.one("select status from jobs where id = ?", job["id"])[0] == "DONE")
        wait_until(done, timeout=120)
    finally:
        worker.terminate()
        worker.wait(30)
    assert receiver.hits == [] and deliveries(srv.data_dir, "job.done") == []
    srv = start_server(srv.data_dir, tmp_path / "server2.log", "--workers", "0")
    try:
        hits = receiver.wait_events("job.done")
        assert len(hits) == 1 and json.loads(hits[0].body)["job"]["id"] == job["id"]
        verify(made["secret"], hits[0])
    finally:
        srv.stop()
