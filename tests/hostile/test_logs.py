"""What the logs must not keep: signed download links (bearer links, valid an hour) and secrets
passed in a query string."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import Server, png_bytes, start_server, upload, wait_job, write_settings


@pytest.fixture
def server(data_dir: Path, tmp_path: Path) -> Iterator[Server]:
    """A server that logs every request (access_log), which it does not by default."""
    write_settings(data_dir, access_log=True)
    srv = start_server(data_dir, tmp_path / "server.log")
    yield srv
    srv.stop()


def test_logs_keep_no_signed_link_nor_query_secret(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    wait_job(client, job["id"])
    url = client.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]
    signature = url.split("signature=")[1]
    assert httpx.get(url).status_code == 200
    assert httpx.head(url).status_code == 200
    assert httpx.get(url.replace("signature=", "signature=f00d")).status_code == 403
    for name in ("token", "sig", "access_token", "api_key", "key", "secret", "password"):
        httpx.get(f"{server.base_url}/health", params={name: f"hush-{name}-4a1f", "page": "2"})

    file_log = (server.data_dir / "logs" / "filekiln.log").read_text(errors="replace")
    for text in (server.log(), file_log):
        assert "/v1/downloads/" in text and "GET /v1/health?" in text  # the requests are logged
        assert signature not in text and "hush-" not in text, text
        assert "expires=" not in text  # a download link's query is dropped whole
        assert "page=2" in text  # other query parameters stay
