"""Shared fixtures: a data dir per test, a real `filekiln serve` on a free port, sample files."""

from __future__ import annotations

import functools
import io
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

import converters  # noqa: F401 - first: it keeps PyMuPDF from importing its layout model (see its __init__)
from tests.backends import BACKENDS, SCALE, backend_env, process_env
from tests.postgres import postgres  # noqa: F401 - the session's PostgreSQL server, for the tests that ask for it
from tests.seaweed import seaweed  # noqa: F401 - the session's S3-compatible store, for the tests that ask for it

pytest_plugins = ["tests.timing"]  # the timing table at the end of the run

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent


def _one_tls_context_per_trust_store() -> None:
    """httpx builds an SSL context for every client, parsing the whole CA bundle (some 50 ms of CPU
    here), and ``httpx.get`` makes a client per call: the suite's one-off requests (each poll of a
    starting server, the fuzzer's check that its server is alive) spent minutes of CPU on it. The
    contexts are made as before, with the same verification, once for each trust store the
    environment names; httpx uses them read-only, as its documentation's advice to share one assumes."""
    from httpx._transports import default

    make = default.create_ssl_context
    made: dict[tuple[bool, str | None, str | None], Any] = {}

    @functools.wraps(make)
    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert is not None:
            return make(verify=verify, cert=cert, trust_env=trust_env)
        store = (trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if store not in made:
            made[store] = make(verify=True, trust_env=trust_env)
        return made[store]

    default.create_ssl_context = shared


_one_tls_context_per_trust_store()


# --------------------------------------------------------------------------- skips in CI

# With CI set (as CI services do), a skip fails the run unless its reason contains one of these. CI
# installs every engine and model the suite uses (.ci/run, the Makefile's test extras), so a family
# that skips there has lost something, and a green run would hide it. Each entry says why that skip
# cannot be helped on CI's Linux runner; none can today: no test has a Windows- or macOS-only path.
CI_ALLOWED_SKIPS: dict[str, str] = {}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unexpected_skip(report: pytest.TestReport | pytest.CollectReport) -> str | None:
    if not in_ci() or not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr).removeprefix("Skipped: ")
    return None if any(allowed in reason for allowed in CI_ALLOWED_SKIPS) else reason


def _fail_unexpected_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    reason = _unexpected_skip(report)
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = (f"skipped in CI: {reason}\nCI runs every family: install what is missing (.ci/run), "
                           "or add the reason to CI_ALLOWED_SKIPS in tests/conftest.py with why it cannot run there")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    _fail_unexpected_skip(report)
    return report


# the directories whose modules start servers and take the longest go first: with pytest-xdist, the many
# short modules of the others then even out the workers' ends (docs/testing.md)
HEAVY_FIRST = ("tests/api/", "tests/workflows/", "tests/hostile/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The heavy directories first; the scale run (tests/backends.py) leaves out the tests marked
    ``embedded``: deselected, not skipped."""
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return next((n for n, prefix in enumerate(HEAVY_FIRST) if path.startswith(prefix)), len(HEAVY_FIRST))

    items.sort(key=rank)  # stable: each directory keeps its order
    if not SCALE:
        return
    kept = [item for item in items if item.get_closest_marker("embedded") is None]
    config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("embedded")])
    items[:] = kept


@pytest.fixture(autouse=True)
def scheduling_as_found() -> Iterator[None]:
    """Each test leaves the test process's scheduling policy as it found it. An engine run in process can
    change it: SVT-AV1 puts the calling thread under SCHED_FIFO when it runs as root, and every server a
    later test starts would inherit that."""
    policy = os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None
    yield
    if policy is not None and os.sched_getscheduler(0) != policy:
        os.sched_setscheduler(0, policy, os.sched_param(0))


@pytest.fixture(scope="session", autouse=True)
def scale_backends() -> Iterator[None]:
    """Stops the scale run's servers at the end of the session (they start with the first data dir)."""
    yield
    BACKENDS.stop()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[pytest.CollectReport]:
    report: pytest.CollectReport = yield  # a module that skips itself as it is imported
    _fail_unexpected_skip(report)
    return report


# --------------------------------------------------------------------------- servers and samples


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    return d


def write_settings(data_dir: Path, **values: Any) -> None:
    lines = []
    for k, v in values.items():
        if isinstance(v, dict):
            continue
        lines.append(f"{k} = {v!r}".replace("'", '"') if not isinstance(v, bool) else f"{k} = {str(v).lower()}")
    for k, v in values.items():
        if isinstance(v, dict):
            lines.append(f"[{k}]")
            lines.extend(f'"{kk}" = {vv!r}' for kk, vv in v.items())
    (data_dir / "settings.toml").write_text("\n".join(lines) + "\n")


@dataclass
class Server:
    data_dir: Path
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    extra_args: list[str] = field(default_factory=list)
    warm_children: bool = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self, key: str | None = None, **kw: Any) -> httpx.Client:
        headers = {"X-API-Key": key} if key else {}
        kw.setdefault("timeout", 60)
        return httpx.Client(base_url=self.base_url, headers=headers, **kw)

    def create_key(self, name: str = "test", quota: int | None = None) -> str:
        """A new key of this install, made in this process through the key service (as ``filekiln keys
        create`` makes it, without starting one)."""
        from localapi.core.keys import KeyService

        db = self.database()
        try:
            return KeyService(db).create(name, quota)[1]
        finally:
            db.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def database(self) -> Any:
        return install_db(self.data_dir)

    def stop(self, kill: bool = False) -> None:
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=30)

    def start_again(self) -> None:
        """Start this stopped server again in place: the same data dir, port, log and options, so that a
        module's tests share one server even where one of them stops it (with :meth:`stop`)."""
        assert self.process.poll() is not None, "the server is still running"
        again = start_server(self.data_dir, self.log_path, *self.extra_args, port=self.port,
                             warm_children=self.warm_children)
        self.process = again.process


def install_settings(data_dir: Path, **overrides: Any) -> Any:
    """The settings of the install on ``data_dir``, as its processes read them (with its back-ends)."""
    from localapi.config import load_settings

    env = backend_env(data_dir)
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        return load_settings(data_dir, **overrides)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def install_db(data_dir: Path) -> Any:
    """The metadata database of the install on ``data_dir``, opened here as its processes open it (its
    settings.toml and back-ends)."""
    from localapi.core.db import open_database

    return open_database(install_settings(data_dir))


def database_text(server: Server) -> str:
    """Every value of every row of the server's metadata database, as text (to look for what must not be there)."""
    db = server.database()
    try:
        if db.kind == "sqlite":
            tables = [r[0] for r in db.all("select name from sqlite_master where type = 'table'")]
        else:
            tables = [r[0] for r in db.all("select table_name from information_schema.tables"
                                           " where table_schema = 'public'")]
        return "\n".join(repr(tuple(row)) for table in tables for row in db.all(f'select * from "{table}"'))
    finally:
        db.close()


def run_cli(data_dir: Path, *args: str, check: bool = True, timeout: float = 120) -> str:
    result = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), *args],
                            capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=process_env(data_dir))
    if check and result.returncode != 0:
        raise AssertionError(f"filekiln {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result.stdout


def start_server(data_dir: Path, log_path: Path, *extra: str, port: int | None = None,
                 warm_children: bool = False) -> Server:
    """``filekiln serve`` on ``data_dir``, answering; ``warm_children``: its conversion children are
    started with it, as a user's are (by default a test server starts each when a job first needs it)."""
    from tests.timing import count_server

    port = port or free_port()
    count_server()
    log = open(log_path, "ab")  # noqa: SIM115 - kept open for the server's lifetime
    proc = subprocess.Popen(
        [sys.executable, "-m", "filekiln", "serve", "--data-dir", str(data_dir), "--port", str(port), *extra],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**process_env(data_dir), "FILEKILN_WARM_CHILDREN": str(warm_children).lower()},
    )
    server = Server(data_dir, port, proc, log_path, list(extra), warm_children)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early:\n{server.log()}")
        try:
            if httpx.get(f"{server.base_url}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"server did not start:\n{server.log()}")


def module_server(tmp_path_factory: pytest.TempPathFactory, name: str, *, warm_children: bool = False,
                  **settings: Any) -> Iterator[Server]:
    """Body of a module-scoped ``server`` fixture: one server for a module whose tests can share it, with
    ``settings`` in its settings.toml (``warm_children``: see :func:`start_server`)."""
    root = tmp_path_factory.mktemp(name)
    (root / "data").mkdir()
    if settings:
        write_settings(root / "data", **settings)
    srv = start_server(root / "data", root / "server.log", warm_children=warm_children)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The server the tests of every module without a server of its own share: one per session (under
    xdist, per worker). Jobs and files belong to a key, and each test has a key of its own."""
    yield from module_server(tmp_path_factory, "shared")


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """The shared server (:func:`shared_server`, or the module's own); a server of the test's own, on its
    ``data_dir``, for a test marked ``fresh_server``: one that changes what the whole server does
    (maintenance, disabled tools, a stop) or looks at what every key did (the log,
    the metrics)."""
    if request.node.get_closest_marker("fresh_server") is None:
        yield request.getfixturevalue("shared_server")
        return
    data_dir: Path = request.getfixturevalue("data_dir")
    srv = start_server(data_dir, request.getfixturevalue("tmp_path") / "server.log")
    yield srv
    srv.stop()


@pytest.fixture
def api_key(server: Server) -> str:
    """A key of the test's own: on a shared server, its jobs and files are the test's alone."""
    return server.create_key()


@pytest.fixture
def client(server: Server, api_key: str) -> Iterator[httpx.Client]:
    with server.client(api_key) as c:
        yield c


def png_bytes(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "PNG")
    return buf.getvalue()


DISTINCT_PAGES = 4


def noisy_gradients(count: int, size: int, seed: int) -> Iterator[Any]:
    """``count`` photo-like pictures (``size`` square RGB arrays): a colour gradient with noise that no
    encoder shrinks much."""
    import numpy as np

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size]
    base = np.stack([(x * 255 // size), (y * 255 // size), ((x + y) * 127 // size)], axis=-1)
    for _ in range(count):
        yield np.clip(base + rng.integers(0, 40, (size, size, 3)), 0, 255).astype("uint8")


@functools.lru_cache(maxsize=8)
def image_pdf_bytes(pages: int = 2, size: int = 1200, seed: int = 1) -> bytes:
    """An image-heavy PDF: each page a photo-like noisy gradient plus a line of text naming the page.
    Made once per process for each size. The pixels go in as a pixmap, stored as they are (encoding PNGs
    first took twenty times as long); past ``DISTINCT_PAGES`` the pictures repeat, each page with a copy
    of its own (an engine works on every page as hard; making 40 distinct 1400-pixel pictures took 5 s).
    For a job that must run for seconds, :func:`slow_pdf_bytes` is nine times smaller."""
    import pymupdf as fitz

    pictures = fitz.open()
    for pixels in noisy_gradients(min(pages, DISTINCT_PAGES), size, seed):
        page = pictures.new_page(width=595, height=842)
        page.insert_image(fitz.Rect(40, 120, 555, 635), pixmap=fitz.Pixmap(fitz.csRGB, size, size, pixels.tobytes(), 0))
    doc = fitz.open()
    for n in range(pages):
        doc.insert_pdf(pictures, from_page=n % DISTINCT_PAGES, to_page=n % DISTINCT_PAGES)
        doc[n].insert_text((50, 80), f"FileKiln sample page {n + 1}", fontsize=18)
    pictures.close()
    data = doc.tobytes()
    doc.close()
    return bytes(data)


@functools.lru_cache(maxsize=2)
def slow_pdf_bytes(pages: int = 80) -> bytes:
    """A PDF that ``pdf-compress`` at level ``extreme`` works on for seconds, reporting progress page after
    page (3 s for 80 pages on a quiet 2-core machine), in 52 MB: each page a 1400-pixel photo-like JPEG,
    which the tool decodes and encodes again. (Raw pictures as in :func:`image_pdf_bytes` made 3.6 s of
    the same work a 235 MB upload.)"""
    import pymupdf as fitz
    from PIL import Image

    pictures = fitz.open()
    for pixels in noisy_gradients(DISTINCT_PAGES, 1400, seed=7):
        jpeg = io.BytesIO()
        Image.fromarray(pixels).save(jpeg, "JPEG", quality=90)
        pictures.new_page(width=595, height=842).insert_image(fitz.Rect(40, 120, 555, 635), stream=jpeg.getvalue())
    doc = fitz.open()
    for n in range(pages):
        doc.insert_pdf(pictures, from_page=n % DISTINCT_PAGES, to_page=n % DISTINCT_PAGES)
        doc[n].insert_text((50, 80), f"FileKiln slow page {n + 1}", fontsize=18)
    data = doc.tobytes()
    doc.close()
    pictures.close()
    return bytes(data)


def upload(client: httpx.Client, name: str, data: bytes, **kw: Any) -> dict[str, Any]:
    r = client.post("/files", files={"file": (name, data)}, **kw)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


def wait_job(client: httpx.Client, job_id: str, timeout: float = 120,
             until: tuple[str, ...] = ("DONE", "FAILED", "CANCELED")) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").json()
        if job["status"] in until:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not reach {until}: {job}")


def failed_job(client: httpx.Client, response: httpx.Response, codes: set[str]) -> dict[str, Any]:
    """The job ``response`` created, once it has failed with one of ``codes`` and a message for people."""
    assert response.status_code == 201, response.text
    job = wait_job(client, response.json()["id"], timeout=120)
    assert job["status"] == "FAILED" and job["errorCode"] in codes, job
    assert "Traceback" not in job["errorMessage"], job
    return job


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["code"] == code, body
    assert body["title"] and body["detail"] and body["type"]
    return body


# What a client can have sent past the limit before it sees the server's answer: the kernel's
# socket buffers on both ends (a few MB each on loopback) and the upload's 1 MB write batch.
IN_FLIGHT = 32 * 1024 * 1024


@dataclass
class StreamedUpload:
    response: httpx.Response
    sent: int  # body bytes the client had sent when the answer arrived
    total: int  # body bytes it meant to send (chunked: what it sent)
    finished: bool  # whether it got to the end of the body before the answer


def stream_upload(server: Server, key: str, file_bytes: int, *, content_length: bool,
                  query: str = "", block: int = 64 * 1024) -> StreamedUpload:
    """Send a multipart upload of ``file_bytes`` zeros, watching for the answer between blocks (see stream_body)."""
    head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'
    tail = b"\r\n--b--\r\n"

    def body() -> Iterator[bytes]:
        yield head
        zeros = b"\x00" * block
        left = file_bytes
        while left:
            yield zeros[: min(block, left)]
            left -= min(block, left)
        yield tail

    total = len(head) + file_bytes + len(tail)
    return stream_body(server, key, body(), total if content_length else None, query)


def read_answer(sock: socket.socket, received: bytes = b"", when: str = "") -> httpx.Response:
    """One response from ``sock`` (Content-Length framed, as every FileKiln error is)."""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed without an answer {when} (got {received[:200]!r})"
        received += chunk
    raw_head, _, content = received.partition(b"\r\n\r\n")
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    headers = [tuple(line.split(": ", 1)) for line in header_lines]
    length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
    while len(content) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the middle of the answer"
        content += chunk
    return httpx.Response(int(status_line.split()[1]), headers=headers, content=content[:length])


def stream_body(server: Server, key: str, pieces: Iterable[bytes], content_length: int | None,
                query: str = "") -> StreamedUpload:
    """POST a multipart body to /files over a raw socket, watching for the answer between pieces.

    httpx only reads the response once the whole body is sent, and uvicorn drains what a
    refused request still sends, so from httpx a server that refuses at the limit and one
    that reads everything before refusing look the same. Here the client stops sending as
    soon as an answer is there, and reports how far it had got. Without ``content_length``
    the body goes chunked.
    """
    import select

    framing = f"Content-Length: {content_length}" if content_length is not None else "Transfer-Encoding: chunked"
    request = (f"POST /v1/files{query} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-API-Key: {key}\r\n"
               f"Content-Type: multipart/form-data; boundary=b\r\n{framing}\r\n\r\n").encode()

    def frame(data: bytes) -> bytes:
        return data if content_length is not None else b"%x\r\n%s\r\n" % (len(data), data)

    total = content_length or 0
    sent, finished, received = 0, False, b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as sock:
        sock.sendall(request)
        try:
            for piece in pieces:
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(frame(piece))
                sent += len(piece)
            else:
                finished = True
                if content_length is None:
                    sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server closed the connection on us: its answer is still to be read
            pass
        response = read_answer(sock, received, f"after {sent} of {total} bytes")
    return StreamedUpload(response, sent, total or sent, finished)


_CLOCK_SAMPLER = "import time\nwhile True:\n    time.sleep(0.02)\n    print(time.monotonic(), flush=True)\n"


class MachineDelays:
    """How long the machine held every process back, sampled from another process while in the block.

    A process that only sleeps 20 ms and prints the clock runs late only when the machine is
    stalled (a loaded CI host, a VM losing its CPU). Timing checks subtract that lost time, so they
    fail when the code under test is slow, not when the machine is. The monotonic clock is shared by
    processes.
    """

    INTERVAL = 0.02

    def __enter__(self) -> MachineDelays:
        self._proc = subprocess.Popen([sys.executable, "-c", _CLOCK_SAMPLER], stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.samples = [float(self._proc.stdout.readline())]  # sampling from here on
        return self

    def __exit__(self, *exc: object) -> None:
        self._proc.terminate()
        self.samples += [float(line) for line in self._proc.communicate()[0].split()]

    def lost(self, start: float, end: float) -> float:
        """Seconds of [start, end] during which the sampler ran later than its sleep."""
        total = 0.0
        for a, b in zip(self.samples, self.samples[1:], strict=False):
            late = b - a - 2 * self.INTERVAL
            if late > 0 and b > start and a < end:
                total += min(late, min(b, end) - max(a, start))
        return total
