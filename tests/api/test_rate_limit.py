"""Rate limits: reads and writes have buckets of their own, so polling never starves job creation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Server, png_bytes, start_server, write_settings


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Tight buckets, so that a test reaches them quickly; both refill too slowly to matter within a
    test. Buckets are a key's own, and each test has a key of its own."""
    data = tmp_path_factory.mktemp("rate-limit") / "data"
    data.mkdir()
    write_settings(data, rate_limit_per_second=0.1, rate_limit_burst=5,
                   read_rate_limit_per_second=0.1, read_rate_limit_burst=40)
    srv = start_server(data, data.parent / "server.log", "--workers", "0")
    yield srv
    srv.stop()


@pytest.mark.backends
def test_polling_does_not_use_up_the_write_bucket(tight: Server) -> None:
    key = tight.create_key()
    with tight.client(key) as c:
        file_id = c.post("/files", files={"file": ("a.png", png_bytes())}).json()["id"]
        for _ in range(30):  # a script polling its file (and the health of the service)
            assert c.get(f"/files/{file_id}").status_code == 200
        # four more writes fit in the write bucket of five, whatever the reads did
        for _ in range(4):
            assert c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [file_id],
                                         "outputFormat": "webp"}).status_code == 201
        refused = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [file_id]})
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1


@pytest.mark.backends
def test_reads_have_a_limit_of_their_own(tight: Server) -> None:
    key = tight.create_key()
    with tight.client(key) as c:
        codes = [c.get("/tools/image-convert").status_code for _ in range(45)]
        assert codes[:40] == [200] * 40 and set(codes[40:]) == {429}
        assert c.post("/files", files={"file": ("a.txt", b"hello")}).status_code == 201  # writes untouched


def test_the_default_write_bucket_takes_a_fast_script_s_burst(server: Server) -> None:
    """A script uploading files as fast as one connection goes (hundreds of writes a second) is
    never refused by the default limits (the shared server's): 1200 uploads, more than the old bucket
    of 500 held."""
    with server.client(server.create_key()) as c:
        codes = {c.post("/files", files={"file": (f"{n}.txt", b"x")}).status_code for n in range(1200)}
    assert codes == {201}
