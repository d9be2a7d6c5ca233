"""A property-based fuzzer of the whole HTTP surface, on the socket.

Schemathesis (test_schemathesis.py) sends what the OpenAPI document describes, through an HTTP
client. This sends what no client would: request lines, methods, paths and query strings, header
names and values, encodings, bodies and their framing (Content-Length, chunked, both, broken), as raw
bytes over TCP. The invariant is one: no 5xx; no error that is not problem+json with a code from the
catalogue for its status; the server alive, with no traceback in its log.

Hypothesis runs derandomized with no example database, so every run sends the same requests. Paths
and bodies may name a real file, a real job (canceled, so that its event stream ends at once) and a
real key through placeholders (``@FILE@``, ``@JOB@``, ``@KEY@``, ``@PORT@``) filled in when sent.
"""

from __future__ import annotations

import json
import socket
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localapi.core.codes import CODES
from tests.conftest import Server, png_bytes, start_server, upload, write_settings

FAKE_JOB = "job_" + "0" * 32
FAKE_FILE = "file_" + "0" * 32


@dataclass(frozen=True)
class Target:
    port: int
    key: str
    file_id: str
    job_id: str

    def fill(self, raw: bytes) -> bytes:
        for placeholder, value in ((b"@PORT@", str(self.port)), (b"@KEY@", self.key), (b"@FILE@", self.file_id),
                                   (b"@JOB@", self.job_id)):
            raw = raw.replace(placeholder, value.encode())
        return raw


@dataclass(frozen=True)
class Request:
    method: bytes  # a HEAD answer carries no body
    raw: bytes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("socket-fuzz")
    (root / "data").mkdir()
    # no workers (nothing the fuzzer queues runs), and rate limits out of the way of the requests
    write_settings(root / "data", rate_limit_per_second=1e6, rate_limit_burst=10**6,
                   read_rate_limit_per_second=1e6, read_rate_limit_burst=10**6)
    srv = start_server(root / "data", root / "server.log", "--workers", "0")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def target(server: Server) -> Target:
    key = server.create_key()
    with server.client(key) as c:
        file_id = upload(c, "a.png", png_bytes())["id"]
        job_id = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [file_id]}).json()["id"]
        assert c.post(f"/jobs/{job_id}/cancel").json()["status"] == "CANCELED"
    return Target(server.port, key, file_id, job_id)


# --------------------------------------------------------------------------- what is sent
# A request is drawn well formed, aimed at one of the API's operations, and then, one time in three,
# given one thing that is wrong with it (see MISTAKES): mostly well formed, so that most requests
# reach the app and its routes rather than stop at the HTTP parser.

TOKENS = st.text(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~", min_size=1, max_size=16)
# header values without CR, LF or NUL, which would end the line or be refused by any parser
VALUES = st.text(st.characters(max_codepoint=255, exclude_characters="\r\n\x00"), max_size=40).map(
    lambda t: t.encode("latin-1"))

# the API's operations; /v1/events is left out: it streams until the client leaves
OPERATIONS = [
    (b"GET", "/v1/health"), (b"GET", "/v1/tools"), (b"GET", "/v1/tools/{}"),
    *[(b"POST", "/v1/files")] * 4, (b"GET", "/v1/files/{}"), (b"DELETE", "/v1/files/{}"),
    *[(b"POST", "/v1/jobs")] * 3, (b"GET", "/v1/jobs"), (b"GET", "/v1/jobs/{}"), (b"GET", "/v1/jobs/{}/result"),
    (b"POST", "/v1/jobs/{}/cancel"), (b"DELETE", "/v1/jobs/{}"), (b"GET", "/v1/jobs/{}/events"),
    (b"GET", "/v1/downloads/{}/{}"), (b"HEAD", "/v1/downloads/{}/{}"), (b"GET", "/v1/usage"),
    *[(b"POST", "/v1/webhooks")] * 2, (b"GET", "/v1/webhooks"), (b"GET", "/v1/webhooks/job-secret"),
    (b"POST", "/v1/webhooks/job-secret"), (b"DELETE", "/v1/webhooks/{}"), (b"GET", "/v1/openapi.json"),
    (b"GET", "/v1/docs"), (b"GET", "/v1/docs/{}"), (b"GET", "/"), (b"OPTIONS", "*"), (b"GET", "//v1//jobs"),
    (b"GET", "http://127.0.0.1:@PORT@/v1/health"),
]
OTHER_METHODS = st.sampled_from([b"GET", b"POST", b"DELETE", b"HEAD", b"PUT", b"PATCH", b"OPTIONS", b"TRACE"])
SEGMENTS = (st.sampled_from(["@FILE@", "@JOB@", FAKE_JOB, FAKE_FILE, "image-convert", "swagger-ui.css", "a.png",
                             "..", "%00", "%2e%2e", "%ff%fe", "a" * 3000])
            | st.text(max_size=20).map(lambda t: quote(t, safe="")))
QUERY_KEYS = st.sampled_from(["wait", "limit", "cursor", "status", "tool", "category", "expires", "signature"]) | TOKENS
# a wait is kept short: a long one is honoured (up to 60 s) on a job that never runs here
WAITS = st.sampled_from(["0", "0.1", "-1", "nan", "x", ""])


@st.composite
def operations(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A method and a target: one of the API's operations, its ids and names filled, a query added."""
    method, route = draw(st.sampled_from(OPERATIONS))
    if draw(st.integers(0, 9)) == 0:
        method = draw(OTHER_METHODS)  # a method the path may not take
    while "{}" in route:
        route = route.replace("{}", draw(SEGMENTS), 1)
    pairs = draw(st.lists(st.tuples(QUERY_KEYS, st.text(max_size=20)), max_size=3))
    query = "&".join(f"{quote(k)}={draw(WAITS) if k == 'wait' else quote(v)}" for k, v in pairs)
    return method, (route + ("?" + query if query else "")).encode()


AUTH = st.sampled_from([[b"X-API-Key: @KEY@"]] * 6 + [
    [], [b"X-API-Key: fk_nope"], [b"Authorization: Bearer @KEY@"], [b"Authorization: Basic Zm9vOmJhcg=="],
    [b"Authorization: Bearer"], [b"X-API-Key: @KEY@", b"Authorization: Bearer nope"]])
KNOWN_HEADERS = {
    b"Range": st.sampled_from([b"bytes=0-10", b"bytes=-5", b"bytes=5-1", b"bytes=0-0,2-3", b"bytes=x", b"lines=1"]),
    b"Idempotency-Key": TOKENS.map(str.encode) | VALUES,
    b"Origin": st.sampled_from([b"http://127.0.0.1:@PORT@", b"http://evil.example", b"null", b"::"]),
    b"Sec-Fetch-Site": st.sampled_from([b"same-origin", b"cross-site", b"none", b"x"]),
    b"Last-Event-ID": st.sampled_from([b"0", b"-1", b"9223372036854775808", b"999999999999999999999", b"x"]),
    b"Expect": st.sampled_from([b"100-continue", b"x"]),
    b"Upgrade": st.sampled_from([b"websocket", b"h2c", b"x"]),
    b"Connection": st.sampled_from([b"keep-alive", b"upgrade", b"x"]),
    b"X-Forwarded-For": st.sampled_from([b"10.0.0.1", b"x"]),
    b"Accept-Encoding": st.sampled_from([b"gzip", b"br", b"*"]),
    b"Content-Encoding": st.sampled_from([b"gzip", b"x"]),
}
EXTRA_HEADERS = st.lists(
    st.sampled_from(sorted(KNOWN_HEADERS)).flatmap(lambda name: KNOWN_HEADERS[name].map(lambda v: name + b": " + v))
    | st.tuples(TOKENS.map(str.encode), VALUES).map(lambda nv: nv[0] + b": " + nv[1]),
    max_size=3)

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4),
                           max_leaves=12)
FILE_IDS = st.sampled_from(["@FILE@", "@FILE@", FAKE_FILE, "x", ""])
JOB_BODIES = st.fixed_dictionaries(
    {"tool": st.sampled_from(["image-convert", "image-convert", "pdf-compress", "nope", ""]) | st.text(max_size=10),
     "inputFileIds": st.lists(FILE_IDS, min_size=1, max_size=3) | JSON_VALUES},
    optional={"params": st.dictionaries(st.sampled_from(["quality", "width", "level", "x"]) | st.text(max_size=10),
                                        JSON_VALUES, max_size=3) | JSON_VALUES,
              "outputFormat": st.sampled_from(["webp", "png", "pdf", ""]) | JSON_VALUES,
              "webhookUrl": st.sampled_from(["http://127.0.0.1:9/hook", "http://10.0.0.1/", "file:///etc/passwd"])})
WEBHOOK_BODIES = st.fixed_dictionaries(
    {"url": st.sampled_from(["http://127.0.0.1:9/hook", "http://10.0.0.1/", "ftp://x", ""]) | st.text(max_size=20),
     "events": st.lists(st.sampled_from(["job.done", "job.failed", "nope"]), max_size=3) | JSON_VALUES})
JSON_BODIES = st.one_of(JOB_BODIES, JOB_BODIES, WEBHOOK_BODIES, JSON_VALUES).map(
    lambda v: json.dumps(v).encode()).flatmap(
    lambda body: st.sampled_from([body] * 4 + [body[: len(body) // 2], body + b"\xff", body.replace(b"{", b"[", 1)]))

BOUNDARIES = TOKENS | st.integers(1, 400).map(lambda n: "b" * n) | st.sampled_from(["a b", '"quoted"', "", "é"])
PARTS = st.lists(st.tuples(st.sampled_from(["file", "file", "other", ""]) | st.text(max_size=8),
                           st.none() | st.sampled_from(["a.png", "../../x.png", ".hidden", "a\u202egnp.exe"])
                           | st.text(max_size=20),
                           st.sampled_from([png_bytes(8, 8), b"", b"hello"]) | st.binary(max_size=64)),
                 max_size=3)


@st.composite
def multipart(draw: st.DrawFn) -> tuple[list[bytes], bytes]:
    """A Content-Type header and a multipart body, mostly well formed, with the same boundary."""
    boundary = draw(BOUNDARIES).encode()
    body = b""
    for name, filename, content in draw(PARTS):
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        body += b"--" + boundary + b"\r\nContent-Disposition: " + disposition.encode() + b"\r\n\r\n"
        body += content + b"\r\n"
    body += draw(st.sampled_from([b"--" + boundary + b"--\r\n"] * 3 + [b"", b"--" + boundary + b"\r\n"]))
    return [b"Content-Type: multipart/form-data; boundary=" + boundary], body


CONTENT_TYPES = st.sampled_from([b"application/json", b"application/json; charset=utf-16",
                                 b"application/merge-patch+json", b"text/plain", b"multipart/form-data",
                                 b"application/x-www-form-urlencoded"]) | VALUES


@st.composite
def bodies(draw: st.DrawFn, method: bytes, target: bytes) -> tuple[list[bytes], bytes]:
    """Headers and a body: JSON to the JSON routes, multipart to uploads, now and then anything."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.lists(CONTENT_TYPES.map(lambda ct: b"Content-Type: " + ct), max_size=1)), draw(
            st.binary(max_size=512))
    if target.startswith(b"/v1/files") and method == b"POST":
        return draw(multipart())
    if method in (b"POST", b"PUT", b"PATCH"):
        return [b"Content-Type: application/json"], draw(JSON_BODIES)
    return [], b""


def framed(body: bytes, framing: str, cuts: list[int]) -> tuple[list[bytes], bytes]:
    """The framing headers and the bytes of ``body``; never a length longer than what is sent, which
    would leave the server waiting for the rest."""
    if framing == "length":
        return ([b"Content-Length: %d" % len(body)] if body else []), body
    if framing == "short":
        return [b"Content-Length: %d" % (len(body) // 2)], body
    if framing == "two lengths":
        return [b"Content-Length: %d" % len(body), b"Content-Length: %d" % (len(body) + 1)], body
    if framing == "none":
        return [], body
    edges = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    pieces = [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    if framing == "bad chunk":
        chunked = b"zz\r\n" + chunked
    return [b"Transfer-Encoding: chunked"] + ([b"Content-Length: %d" % len(body)] if framing == "both" else []), chunked


# the one thing wrong with a request, if any
MISTAKES = [None] * 30 + [
    "method", "version", "path bytes", "no host", "two hosts", "foreign host", "header bytes", "header name",
    "short", "two lengths", "both", "bad chunk", "none", "bare LF", "huge header"]


@st.composite
def requests(draw: st.DrawFn) -> Request:
    method, target = draw(operations())
    mistake = draw(st.sampled_from(MISTAKES))
    if mistake == "method":
        method = draw(TOKENS.map(str.encode) | st.binary(min_size=1, max_size=8))
    if mistake == "path bytes":
        target += draw(st.binary(min_size=1, max_size=10))
    version = draw(st.sampled_from([b"HTTP/1.0", b"HTTP/2.0", b"http/1.1", b"HTTP/1.1 x", b""])) if (
        mistake == "version") else b"HTTP/1.1"
    hosts = {"no host": [], "two hosts": [b"Host: 127.0.0.1:@PORT@"] * 2,
             "foreign host": [draw(st.sampled_from([b"Host: evil.example", b"Host: ", b"Host: 127.0.0.1:1"]))]}
    body_headers, body = draw(bodies(method, target))
    framing = mistake if mistake in ("short", "two lengths", "both", "bad chunk", "none") else draw(
        st.sampled_from(["length", "length", "chunked"]))
    framing_headers, payload = framed(body, framing, draw(st.lists(st.integers(0, 10**6), max_size=4)))
    headers = [*hosts.get(mistake or "", [b"Host: 127.0.0.1:@PORT@"]), *draw(AUTH), *body_headers,
               *framing_headers, *draw(EXTRA_HEADERS)]
    if mistake == "header bytes":
        headers.append(draw(st.binary(min_size=1, max_size=40)))
    if mistake == "header name":
        headers.append(draw(st.binary(min_size=1, max_size=10)) + b": x")
    if mistake == "huge header":
        headers.append(b"X-Big: " + b"a" * draw(st.integers(16 * 1024, 70 * 1024)))
    headers = draw(st.permutations(headers)) + [b"Connection: close"]  # one request per connection
    newline = b"\n" if mistake == "bare LF" else b"\r\n"
    line = method + b" " + target + b" " + version
    return Request(method, newline.join([line, *headers]) + newline + newline + payload)


# --------------------------------------------------------------------------- what must come back


def exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw``, read until the server closes (the request says ``Connection: close``)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        try:
            sock.sendall(raw)
            while chunk := sock.recv(65536):
                received += chunk
        except (ConnectionResetError, BrokenPipeError):  # closed on a request it refused halfway
            pass
    return received


def final_response(received: bytes) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and rest of the first response that is not a 1xx."""
    while True:
        head, _, rest = received.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines)}
        if status >= 200:
            return status, headers, rest
        received = rest


def check(request: Request, received: bytes) -> None:
    assert received.startswith(b"HTTP/1.1 "), f"no answer: {received[:200]!r}"
    status, headers, rest = final_response(received)
    assert status < 500, (status, rest[:500])
    if status < 400:
        return
    assert headers.get("content-type", "").startswith("application/problem+json"), (status, headers, rest[:300])
    if request.method == b"HEAD":
        return
    problem = json.loads(rest[: int(headers["content-length"])])
    assert problem["status"] == status and problem["title"] and problem["detail"], problem
    assert status in CODES[problem["code"]].statuses, f"{problem['code']} is not documented for {status}"


def sent(method: bytes, path: bytes, headers: list[bytes], body: bytes = b"") -> bytes:
    """A request as the fuzzer would send it, with a Content-Length when there is a body."""
    lines = [method + b" " + path + b" HTTP/1.1", b"Host: 127.0.0.1:@PORT@", *headers,
             *([b"Content-Length: %d" % len(body)] if body else []), b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


JSON_WITH_KEY = [b"X-API-Key: @KEY@", b"Content-Type: application/json"]
KNOWN_SHAPES = [  # requests that once got a 5xx or a plain-text error
    sent(b"POST", b"/v1/files", [b"X-API-Key: @KEY@", b"Content-Type: multipart/form-data; boundary=" + b"b" * 300],
         b"--" + b"b" * 300 + b'\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nx\r\n'),
    sent(b"POST", b"/v1/jobs", JSON_WITH_KEY, b'{"tool": ' + b"9" * 5000 + b"}"),
    sent(b"POST", b"/v1/jobs", JSON_WITH_KEY, b"[" * 5000 + b"]" * 5000),
    sent(b"POST", b"/v1/jobs", JSON_WITH_KEY, b'{"tool": "\xff"}'),
    sent(b"GET", b"/v1/h\xc3\xa9alth", []),
    sent(b"GET", b"/v1/health", [b"Host: 127.0.0.1:@PORT@"]),
    sent(b"GET", b"/v1/health", [b"X-Big: " + b"a" * 70000]),
    sent(b"POST", b"/v1/jobs", [b"Transfer-Encoding: gzip"]),
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40,  # a TLS hello
]


def with_known_shapes(test: Callable[..., None]) -> Callable[..., None]:
    """Every run sends these first, whatever Hypothesis draws."""
    for raw in KNOWN_SHAPES:
        test = example(request=Request(raw.split(b" ", 1)[0], raw))(test)
    return test


@settings(max_examples=400, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@with_known_shapes
@given(request=requests())
def test_no_request_gets_a_5xx_or_a_plain_text_error(server: Server, target: Target, request: Request) -> None:
    log_before = len(server.log())
    check(request, exchange(server.port, target.fill(request.raw)))
    assert httpx.get(f"{server.base_url}/health", timeout=30).status_code == 200
    new_log = server.log()[log_before:]
    assert "Traceback" not in new_log and "Fatal error" not in new_log, new_log[-3000:]
