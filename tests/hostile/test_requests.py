"""Requests built to hurt the server rather than to be served: bodies too big to hold, bodies and
headers that never end, malformed framing, and addresses made up to dodge the rate limit.

Most of these are sent over a raw socket: an HTTP client would refuse to send them, or would only
read the answer once it had sent everything, which hides whether the server answered early.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Server, assert_problem, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("requests")
    (root / "data").mkdir()
    srv = start_server(root / "data", root / "server.log", "--workers", "0")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    return server.create_key()


# --------------------------------------------------------------------------- malformed requests: problem+json


def test_a_multipart_boundary_over_256_characters_is_malformed_request(server: Server, key: str) -> None:
    boundary = "b" * 300
    content = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
               f"hello\r\n--{boundary}--\r\n").encode()
    with server.client(key) as c:
        r = c.post("/files", content=content, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert_problem(r, 400, "malformed_request")
    assert "Traceback" not in server.log()
