"""Requests built to hurt the server rather than to be served: bodies too big to hold, bodies and
headers that never end, malformed framing, and addresses made up to dodge the rate limit.

Most of these are sent over a raw socket: an HTTP client would refuse to send them, or would only
read the answer once it had sent everything, which hides whether the server answered early.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from localapi.core.ratelimit import KEEP_BUCKETS, RateLimiter
from tests.conftest import (
    IN_FLIGHT,
    Server,
    assert_problem,
    png_bytes,
    read_answer,
    start_server,
    upload,
    write_settings,
)

MB = 1024 * 1024
JSON_LIMIT = MB  # docs/api.md, "Request limits": a JSON body may be 1 MiB
HEAD_SECONDS = 2  # the wire servers' request_head_seconds (10 by default, docs/api.md "Request limits") ...
BODY_IDLE_SECONDS = 4  # ... and request_body_idle_seconds (20 by default)
SLACK = 25.0  # what a loaded two-core machine may add before a timer's close is seen


@pytest.fixture(scope="module")
def key(shared_server: Server) -> str:
    """The tests that need no settings of their own run on the shared server (``server``), with this key."""
    return shared_server.create_key()


@dataclass
class Wire:
    server: Server
    key: str


@pytest.fixture(scope="module", params=["httptools", "h11"])
def wire(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    """A server on each HTTP parser (the ``http_parser`` setting): what the HTTP layer does itself
    (stalls, refusals, chunked bodies) is the same on both."""
    root = tmp_path_factory.mktemp(f"wire-{request.param}")
    (root / "data").mkdir()
    write_settings(root / "data", http_parser=request.param, request_head_seconds=HEAD_SECONDS,
                   request_body_idle_seconds=BODY_IDLE_SECONDS)
    srv = start_server(root / "data", root / "server.log", "--workers", "0")
    yield Wire(srv, srv.create_key())
    srv.stop()


def test_auto_serves_with_httptools() -> None:
    """httptools is a dependency (the fast parser); ``auto`` picks it, and h11 stays for ``h11``."""
    from localapi.http.protocol import ProblemH11Protocol, ProblemHttpToolsProtocol, http_protocol

    assert http_protocol("auto") is ProblemHttpToolsProtocol
    assert http_protocol("h11") is ProblemH11Protocol


# --------------------------------------------------------------------------- raw HTTP over a socket


@dataclass
class Sent:
    response: httpx.Response
    sent: int  # body bytes sent when the answer arrived
    finished: bool  # whether the whole body went out before the answer


def head(method: str, path: str, port: int, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def send(port: int, request_head: bytes, pieces: Iterable[bytes] = (), *, chunked: bool = False,
         timeout: float = 120) -> Sent:
    """Send ``request_head`` then the body ``pieces``, stopping as soon as an answer is there."""
    sent, finished = 0, False
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request_head)
        try:
            for piece in pieces:
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
            else:
                finished = True
                if chunked:
                    sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server closed on us: its answer is still to be read
            pass
        return Sent(read_answer(sock), sent, finished)


def json_body(total: int, block: int = 256 * 1024) -> Iterator[bytes]:
    """A JSON document of ``total`` bytes, one long string, in blocks."""
    start, end = b'{"tool": "', b'"}'
    yield start
    left = total - len(start) - len(end)
    filler = b"a" * block
    while left > 0:
        yield filler[: min(block, left)]
        left -= min(block, left)
    yield end


class PeakMemory:
    """The highest resident size a process reaches while in the block, sampled every 10 ms."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = self.start = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> int:
        return self.peak - self.start


def warm_up(server: Server, key: str) -> None:
    """Bring every code path of a JSON request into memory first, so that growth means the body."""
    with server.client(key) as c:
        for _ in range(3):
            c.post("/jobs", json={"tool": "image-convert", "inputFileIds": []})
            httpx.post(f"{server.base_url}/jobs", json={"tool": "x"})


# --------------------------------------------------------------------------- bodies the server must not hold


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/webhooks"])
def test_a_json_body_without_a_key_is_refused_before_it_is_read(server: Server, key: str, path: str) -> None:
    warm_up(server, key)
    total = 300 * MB
    with PeakMemory(server.process.pid) as memory:
        started = time.monotonic()
        answer = send(server.port, head("POST", path, server.port, {
            "Content-Type": "application/json", "Content-Length": str(total)}), json_body(total))
        elapsed = time.monotonic() - started
    assert memory.growth < 64 * MB, memory.growth
    assert_problem(answer.response, 401, "invalid_api_key")
    assert not answer.finished and answer.sent < IN_FLIGHT, (answer.sent, elapsed)


def test_a_json_body_with_a_wrong_key_is_refused_before_it_is_read(server: Server) -> None:
    total = 300 * MB
    answer = send(server.port, head("POST", "/v1/jobs", server.port, {
        "X-API-Key": "fk_" + "x" * 43, "Content-Type": "application/json", "Content-Length": str(total)}),
        json_body(total))
    assert_problem(answer.response, 401, "invalid_api_key")
    assert not answer.finished and answer.sent < IN_FLIGHT, answer.sent


def test_a_declared_json_body_over_the_limit_is_413_at_once(server: Server, key: str) -> None:
    warm_up(server, key)
    total = 300 * MB
    with PeakMemory(server.process.pid) as memory:
        answer = send(server.port, head("POST", "/v1/jobs", server.port, {
            "X-API-Key": key, "Content-Type": "application/json", "Content-Length": str(total)}), json_body(total))
    body = assert_problem(answer.response, 413, "request_too_large")
    assert str(JSON_LIMIT) in body["detail"]
    assert not answer.finished and answer.sent < IN_FLIGHT, answer.sent
    assert memory.growth < 64 * MB, memory.growth


def test_a_chunked_json_body_is_cut_off_at_the_limit(wire: Wire) -> None:
    server, key = wire.server, wire.key
    warm_up(server, key)
    total = 200 * MB
    with PeakMemory(server.process.pid) as memory:
        answer = send(server.port, head("POST", "/v1/jobs", server.port, {
            "X-API-Key": key, "Content-Type": "application/json", "Transfer-Encoding": "chunked"}),
            json_body(total, block=64 * 1024), chunked=True)
    assert_problem(answer.response, 413, "request_too_large")
    assert not answer.finished and answer.sent < JSON_LIMIT + IN_FLIGHT, answer.sent
    assert memory.growth < 64 * MB, memory.growth


def test_json_bodies_up_to_the_limit_and_uploads_beyond_it_are_read(server: Server, key: str) -> None:
    with server.client(key) as c:
        ref = upload(c, "big.bin", b"\x01" * (8 * MB))  # uploads are streamed to disk: no JSON limit
        assert ref["sizeBytes"] == 8 * MB
        padded = {"tool": "image-convert", "inputFileIds": [ref["id"]], "params": {"pad": "a" * (JSON_LIMIT - 200)}}
        assert len(json.dumps(padded)) < JSON_LIMIT
        # read in full and judged on its content: the param is unknown, the file no image
        assert c.post("/jobs", json=padded).status_code in (415, 422)
        r = c.post("/jobs", content=json.dumps({**padded, "params": {"pad": "a" * JSON_LIMIT}}),
                   headers={"Content-Type": "application/json"})
        assert_problem(r, 413, "request_too_large")
        assert c.get("/usage").status_code == 200  # the connection and the server carry on


# --------------------------------------------------------------------------- requests that never end


def closes_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Whether the server closes ``sock`` within ``seconds``, and what it sent before."""
    received = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if select.select([sock], [], [], 0.5)[0]:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return True, received
            if not chunk:
                return True, received
            received += chunk
    return False, received


def test_half_sent_headers_and_bodies_are_closed_and_slow_uploads_are_not(wire: Wire) -> None:
    server, key = wire.server, wire.key
    port = server.port
    files_head = head("POST", "/v1/files", port, {
        "X-API-Key": key, "Content-Type": "multipart/form-data; boundary=b", "Content-Length": "100000"})
    part_of_a_file = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\nxyz'
    stalled = {  # what each connection sends before it stalls, and how many of them
        # the request line and part of the headers
        "headers": (b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-", 40),
        # nothing at all
        "silent": (b"", 10),
        # a JSON body that stops halfway, with a key (the server reads it) and without (it does not)
        "json": (head("POST", "/v1/jobs", port, {"X-API-Key": key, "Content-Type": "application/json",
                                                 "Content-Length": "1000"}) + b'{"tool": "ima', 20),
        "anonymous json": (head("POST", "/v1/jobs", port, {"Content-Type": "application/json",
                                                           "Content-Length": "1000"}) + b'{"tool": "ima', 20),
        # an upload that stops halfway
        "upload": (files_head + part_of_a_file, 20),
    }
    sockets: dict[str, list[socket.socket]] = {kind: [] for kind in stalled}
    for kind, (sent, count) in stalled.items():
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(sent)
            sockets[kind].append(sock)

    # meanwhile a slow, steady upload: a piece every second, for longer than a body may pause
    slow: dict[str, httpx.Response] = {}

    def slow_upload() -> None:
        def pieces() -> Iterator[bytes]:
            yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n'
            for _ in range(BODY_IDLE_SECONDS + 3):
                time.sleep(1)
                yield b"\x01" * 1000
            yield b"\r\n--b--\r\n"

        slow["answer"] = send(port, head("POST", "/v1/files", port, {
            "X-API-Key": key, "Content-Type": "multipart/form-data; boundary=b", "Transfer-Encoding": "chunked"}),
            pieces(), chunked=True).response

    uploader = threading.Thread(target=slow_upload)
    uploader.start()
    started = time.monotonic()
    try:
        for kind, socks in sockets.items():
            limit = HEAD_SECONDS if kind in ("headers", "silent") else BODY_IDLE_SECONDS
            for sock in socks:
                closed, received = closes_within(sock, limit + SLACK - (time.monotonic() - started))
                assert closed, f"a {kind} request was still open after {time.monotonic() - started:.0f} s"
                if received:  # a request that was begun is told why it ends
                    answer = read_answer(sock, received) if b"\r\n\r\n" in received else None
                    assert answer is not None and answer.status_code in (401, 408), received[:300]
                    if answer.status_code == 408:
                        assert_problem(answer, 408, "request_timeout")
        assert httpx.get(f"{server.base_url}/health", timeout=30).status_code == 200
    finally:
        for socks in sockets.values():
            for sock in socks:
                sock.close()
        uploader.join(120)
    assert slow["answer"].status_code == 201, slow["answer"].text
    assert slow["answer"].json()["sizeBytes"] == (BODY_IDLE_SECONDS + 3) * 1000


def test_the_stall_limits_are_settings_whose_defaults_are_the_documented_ones() -> None:
    from localapi.config import Settings
    from localapi.http import protocol

    assert (Settings().request_head_seconds, Settings().request_body_idle_seconds) == (10, 20)
    for parser in ("h11", "httptools"):
        default = protocol.http_protocol(parser)
        assert (default.head_seconds, default.body_idle_seconds) == (10, 20)  # type: ignore[attr-defined]
        short = protocol.http_protocol(parser, 2, 4)
        assert issubclass(short, default) and (short.head_seconds, short.body_idle_seconds) == (2, 4)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- malformed requests: problem+json


def deep(depth: int) -> bytes:
    return b'{"tool": "image-convert", "inputFileIds": [], "params": {"a": ' + b"[" * depth + b"]" * depth + b"}}"


@pytest.mark.parametrize("content", [
    b'{"tool": "image-convert", "inputFileIds": [], "params": {"n": ' + b"9" * 5000 + b"}}",
    deep(5000),
    b'{"tool": "image-\xff\xfe", "inputFileIds": []}',
    b'{"tool": "image-convert", "inputFileIds": [], "params": {"n": NaN}',
], ids=["5000 digits", "5000 deep", "invalid utf-8", "cut off"])
def test_json_the_parser_cannot_read_is_malformed_request(server: Server, key: str, content: bytes) -> None:
    with server.client(key) as c:
        r = c.post("/jobs", content=content, headers={"Content-Type": "application/json"})
    assert_problem(r, 400, "malformed_request")


def test_a_multipart_boundary_over_256_characters_is_malformed_request(server: Server, key: str) -> None:
    boundary = "b" * 300
    seen = len(server.log())
    content = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
               f"hello\r\n--{boundary}--\r\n").encode()
    with server.client(key) as c:
        r = c.post("/files", content=content, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert_problem(r, 400, "malformed_request")
    assert "Traceback" not in server.log()[seen:]


@pytest.mark.parametrize(("raw", "status", "code"), [
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n", 431, "request_too_large"),
    (b"GET /v1/h\xc3\xa9alth HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "malformed_request"),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "malformed_request"),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "malformed_request"),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
     "malformed_request"),
    (b"GET /v1/health\r\n\r\n", 400, "malformed_request"),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40, 400, "malformed_request"),  # TLS to plain HTTP
], ids=["header over 16 KB", "non-ASCII path", "two Host headers", "unknown transfer coding",
        "two content lengths", "HTTP/0.9", "TLS hello"])
def test_requests_the_http_layer_refuses_are_problem_json(wire: Wire, raw: bytes, status: int, code: str) -> None:
    with socket.create_connection(("127.0.0.1", wire.server.port), timeout=30) as sock:
        try:
            for i in range(0, len(raw), 8192):  # in pieces, as a big header arrives over the network
                if select.select([sock], [], [], 0.05)[0]:
                    break  # answered already
                sock.sendall(raw[i:i + 8192])
        except OSError:  # closed on us: the answer is still to be read
            pass
        answer = read_answer(sock)
    body = assert_problem(answer, status, code)
    assert answer.headers["connection"] == "close"
    assert "Invalid HTTP request" not in json.dumps(body)


# --------------------------------------------------------------------------- the anonymous rate limit


def tight_server(tmp_path: Path, **settings: object) -> Server:
    data = tmp_path / "data"
    data.mkdir()
    # a read bucket of 5 that refills too slowly to matter within a test
    write_settings(data, read_rate_limit_per_second=0.01, read_rate_limit_burst=5, **settings)
    return start_server(data, tmp_path / "server.log", "--workers", "0")


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One tight server for the tests that need no proxy: each anonymous reader's bucket is its own."""
    srv = tight_server(tmp_path_factory.mktemp("tight"))
    yield srv
    srv.stop()


def test_x_forwarded_for_does_not_make_a_new_anonymous_client(tight: Server) -> None:
    codes = [httpx.get(f"{tight.base_url}/health", headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code
             for i in range(1, 12)]
    # one bucket of 5 for all eleven, of which start_server's /health polls took at least one
    assert 429 in codes and codes.count(200) <= 4 and codes == sorted(codes), codes


def test_x_forwarded_for_is_trusted_from_a_listed_proxy(tmp_path: Path) -> None:
    srv = tight_server(tmp_path, trusted_proxies=["127.0.0.1"])
    try:
        codes = [httpx.get(f"{srv.base_url}/health", headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code
                 for i in range(1, 12)]
        assert codes == [200] * 11, codes  # each is a client of its own behind the proxy
    finally:
        srv.stop()


def test_each_anonymous_job_reader_has_a_share_of_its_own(tight: Server) -> None:
    with tight.client(tight.create_key()) as c:
        ref = upload(c, "a.png", png_bytes())
        jobs = [c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()["id"]
                for _ in range(2)]
    greedy = [httpx.get(f"{tight.base_url}/jobs/{jobs[0]}").status_code for _ in range(10)]
    assert 429 in greedy, greedy
    # another poller on the same machine, of another job, is not starved by the first
    assert [httpx.get(f"{tight.base_url}/jobs/{jobs[1]}").status_code for _ in range(4)] == [200] * 4
    assert httpx.get(f"{tight.base_url}/jobs/{jobs[1]}/result").status_code == 409
    # and guessing ids does not buy fresh buckets: unknown ones share the address's bucket
    guesses = [httpx.get(f"{tight.base_url}/jobs/job_{i:032x}").status_code for i in range(10)]
    assert set(guesses) <= {404, 429} and 429 in guesses, guesses


def test_buckets_that_filled_up_again_are_forgotten() -> None:
    """Anonymous readers of one job come and go: their buckets must not pile up, those still
    limiting someone must stay."""
    refilled_at_once = RateLimiter(1e12, 2)
    for i in range(3 * KEEP_BUCKETS):
        refilled_at_once.take(f"anon:127.0.0.1:job_{i}")
    assert len(refilled_at_once) <= KEEP_BUCKETS
    never_refilled = RateLimiter(1e-9, 2)
    for i in range(3 * KEEP_BUCKETS):
        never_refilled.take(f"anon:127.0.0.1:job_{i}")
    assert len(never_refilled) == 3 * KEEP_BUCKETS
