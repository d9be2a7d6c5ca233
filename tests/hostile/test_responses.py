"""What the server answers around the edges: results of jobs that did not succeed, methods a path
does not take, HEAD on download links, the docs page's own assets and headers."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest

from localapi.core.signing import LinkSigner
from tests.conftest import Server, assert_problem, png_bytes, start_server, upload, wait_job


@pytest.fixture(scope="module")
def client(shared_server: Server) -> Iterator[httpx.Client]:
    with shared_server.client(shared_server.create_key()) as c:
        yield c


def done_job(client: httpx.Client) -> dict[str, str]:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                     "outputFormat": "webp"}).json()
    assert wait_job(client, job["id"])["status"] == "DONE"
    return dict(client.get(f"/jobs/{job['id']}/result").json(), jobId=job["id"])


# ---------------------------------------------------------------- results of jobs that did not succeed


def test_result_of_a_failed_job_is_job_failed_without_retry_after(client: httpx.Client) -> None:
    whole = png_bytes(200, 200)
    ref = upload(client, "broken.png", whole[: len(whole) // 2])  # a PNG by its signature, cut off
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                     "outputFormat": "webp"}).json()
    assert wait_job(client, job["id"])["status"] == "FAILED"
    r = client.get(f"/jobs/{job['id']}/result")
    assert_problem(r, 409, "job_failed")
    assert "retry-after" not in r.headers  # waiting will not make a failed job succeed


def test_result_of_a_canceled_job_is_job_canceled_without_retry_after(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    srv = start_server(data, tmp_path / "server.log", "--workers", "0")  # the job stays QUEUED until canceled
    try:
        with srv.client(srv.create_key()) as c:
            ref = upload(c, "a.png", png_bytes())
            job = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
            r = c.get(f"/jobs/{job['id']}/result")
            assert_problem(r, 409, "job_not_finished")
            assert r.headers["Retry-After"] == "1"  # still worth asking again
            assert c.post(f"/jobs/{job['id']}/cancel").json()["status"] == "CANCELED"
            r = c.get(f"/jobs/{job['id']}/result")
            assert_problem(r, 409, "job_canceled")
            assert "retry-after" not in r.headers
    finally:
        srv.stop()


def test_a_deleted_result_is_gone_not_unknown(client: httpx.Client) -> None:
    """The job is still there, its result was deleted: 410, like a result retention purged."""
    result = done_job(client)
    file_id = result["files"][0]["id"]  # type: ignore[index]
    assert client.delete(f"/files/{file_id}").status_code == 204
    assert_problem(client.get(f"/jobs/{result['jobId']}/result"), 410, "result_deleted")
    assert_problem(httpx.get(result["downloadUrl"]), 410, "file_deleted")


# ---------------------------------------------------------------- methods: Allow on 405, HEAD on download links


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("PUT", "/jobs", "GET, POST"),
    ("DELETE", "/tools", "GET"),
    ("PATCH", "/jobs/job_00000000000000000000000000000000", "DELETE, GET"),
    ("GET", "/jobs/job_00000000000000000000000000000000/cancel", "POST"),
    ("PUT", "/files/file_00000000000000000000000000000000", "DELETE, GET"),
    ("POST", "/downloads/file_00000000000000000000000000000000/a.png", "GET, HEAD"),
    ("POST", "/health", "GET"),
    ("PUT", "/webhooks/job-secret", "GET, POST"),  # a literal path, beside /webhooks/{id} (DELETE)
    ("PUT", "/webhooks/wh_00000000000000000000000000000000", "DELETE"),
])
def test_405_names_the_methods_the_path_takes(client: httpx.Client, method: str, path: str, allowed: str) -> None:
    r = client.request(method, path)
    assert_problem(r, 405, "method_not_allowed")
    assert r.headers["Allow"] == allowed


def test_head_on_a_download_link_gives_the_get_headers_without_the_body(client: httpx.Client) -> None:
    url = done_job(client)["downloadUrl"]
    got = httpx.get(url)
    head = httpx.head(url)
    assert got.status_code == head.status_code == 200
    assert got.content and head.content == b""

    def same(r: httpx.Response) -> dict[str, str]:
        return {k: v for k, v in r.headers.items() if k != "date"}

    assert same(head) == same(got)
    assert head.headers["Content-Length"] == str(len(got.content))
    part = httpx.head(url, headers={"Range": "bytes=2-5"})
    assert part.status_code == 206 and part.headers["Content-Range"] == f"bytes 2-5/{len(got.content)}"
    assert part.headers["Content-Length"] == "4" and part.content == b""


def test_head_on_a_download_link_checks_the_signature_and_expiry(server: Server, client: httpx.Client) -> None:
    url = done_job(client)["downloadUrl"]
    assert_head_problem(httpx.head(url.replace("signature=", "signature=0")), 403)
    file_id = url.split("/downloads/")[1].split("/")[0]
    db = server.database()
    signer = LinkSigner(bytes.fromhex(db.get_setting("signing_secret") or ""))
    assert_head_problem(httpx.head(f"{server.base_url}{signer.path(file_id, 'a.webp', int(time.time()) - 10)}"), 410)


def assert_head_problem(r: httpx.Response, status: int) -> None:
    assert r.status_code == status and r.content == b""
    assert r.headers["content-type"].startswith("application/problem+json")


# ---------------------------------------------------------------- the docs page: its own assets, locked down

ASSET = re.compile(r'<(?:script|link)\b[^>]*?(?:src|href)="([^"]+)"', re.IGNORECASE)


def test_the_docs_page_loads_only_its_own_assets(server: Server) -> None:
    page = httpx.get(f"{server.base_url}/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "//" not in "".join(ASSET.findall(page.text)), page.text  # nothing from another origin, no CDN
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page.text) is None, page.text  # no inline script
    assets = {urljoin(str(page.url), ref) for ref in ASSET.findall(page.text)}
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for url in assets:
        r = httpx.get(url)
        assert r.status_code == 200 and r.content, url
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        kind = r.headers["content-type"]
        assert kind.startswith(("text/javascript", "text/css", "image/")), (url, kind)
    bundle = next(a for a in assets if a.endswith("swagger-ui-bundle.js"))
    assert b"SwaggerUIBundle" in httpx.get(bundle).content
    init = httpx.get(next(a for a in assets if a.endswith(".js") and not a.endswith("swagger-ui-bundle.js"))).text
    assert "openapi.json" in init and "validatorUrl: null" in init  # no spec sent to an online validator


def test_html_answers_forbid_framing_and_foreign_scripts(server: Server) -> None:
    """Every HTML page the server has (today /v1/docs), and its policy."""
    schema = httpx.get(f"{server.base_url}/openapi.json").json()
    documented = {path for path, ops in schema["paths"].items() if "get" in ops}
    pages = []
    for path in ["/v1/docs", "/v1/redoc", "/docs", "/redoc", *documented]:
        if "{" in path:
            continue
        r = httpx.get(f"http://127.0.0.1:{server.port}{path}")
        if r.headers.get("content-type", "").startswith("text/html"):
            pages.append(path)
            assert r.headers["X-Frame-Options"] == "DENY", path
            policy = dict(p.strip().split(" ", 1) for p in r.headers["Content-Security-Policy"].split(";") if p.strip())
            assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'none'"
            assert policy["script-src"] == policy["style-src"] == policy["connect-src"] == "'self'"
            assert "http" not in r.headers["Content-Security-Policy"]
    assert pages == ["/v1/docs"]
