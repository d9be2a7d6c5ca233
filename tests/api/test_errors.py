"""Every error status the API returns, each with its problem+json body and stable code."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from localapi.core.signing import LinkSigner
from tests.conftest import (
    IN_FLIGHT,
    Server,
    assert_problem,
    image_pdf_bytes,
    install_settings,
    png_bytes,
    start_server,
    stream_upload,
    upload,
    wait_job,
    write_settings,
)


def test_missing_key_is_401(server: Server) -> None:
    with server.client() as anon:
        assert_problem(anon.post("/files", files={"file": ("a.png", png_bytes())}), 401, "invalid_api_key")
        assert_problem(anon.post("/jobs", json={"tool": "image-convert", "inputFileIds": ["x"]}),
                       401, "invalid_api_key")
        assert_problem(anon.get("/tools"), 401, "invalid_api_key")


def test_wrong_key_is_401(server: Server) -> None:
    with server.client("fk_not-a-real-key") as bad:
        assert_problem(bad.get("/tools"), 401, "invalid_api_key")


def test_bearer_header_works_like_x_api_key(server: Server, api_key: str) -> None:
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {api_key}"}) as c:
        ref = upload(c, "a.png", png_bytes())
        assert c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).status_code == 201
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Basic {api_key}"}) as c:
        assert_problem(c.get("/tools"), 401, "invalid_api_key")


def test_revoked_key_is_401_at_once(server: Server, api_key: str) -> None:
    from tests.conftest import run_cli

    with server.client(api_key) as c:
        assert c.get("/tools").status_code == 200
        key_id = c.get("/usage").json()["keyId"]
        run_cli(server.data_dir, "keys", "revoke", key_id)
        assert_problem(c.get("/tools"), 401, "invalid_api_key")


def test_job_of_another_key_is_404_to_it(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    with server.client(server.create_key("other")) as other:
        assert_problem(other.get(f"/jobs/{job['id']}"), 404, "job_not_found")
        assert_problem(other.get(f"/files/{ref['id']}"), 404, "file_not_found")
        r = other.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]})
        assert_problem(r, 422, "unknown_file")
    with server.client() as anon:  # the job id alone is enough, as the contract's description says
        assert anon.get(f"/jobs/{job['id']}").json()["id"] == job["id"]


@pytest.mark.backends
def test_daily_quota_gives_402_with_quota_headers(server: Server) -> None:
    with server.client(server.create_key("limited", quota=2)) as c:
        ref = upload(c, "a.png", png_bytes())
        body = {"tool": "image-convert", "inputFileIds": [ref["id"]]}
        first = c.post("/jobs", json=body)
        assert first.headers["x-quota-limit"] == "2" and first.headers["x-quota-remaining"] == "1"
        assert c.post("/jobs", json=body).headers["x-quota-remaining"] == "0"
        r = c.post("/jobs", json=body)
        assert_problem(r, 402, "quota_exceeded")
        assert r.headers["x-quota-remaining"] == "0"
        assert c.get("/usage").json()["remainingToday"] == 0


def test_unknown_job_is_404(client: httpx.Client) -> None:
    assert_problem(client.get("/jobs/job_00000000000000000000000000000000"), 404, "job_not_found")


def test_result_of_unfinished_job_is_409(client: httpx.Client) -> None:
    ref = upload(client, "big.pdf", image_pdf_bytes(pages=6, size=900))
    job = client.post("/jobs", json={"tool": "pdf-compress", "inputFileIds": [ref["id"]]}).json()
    assert_problem(client.get(f"/jobs/{job['id']}/result"), 409, "job_not_finished")


def test_cancel_of_finished_job_is_409(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    wait_job(client, job["id"])
    assert_problem(client.post(f"/jobs/{job['id']}/cancel"), 409, "job_finished")


def test_malformed_json_is_400(client: httpx.Client) -> None:
    r = client.post("/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
    assert_problem(r, 400, "malformed_request")


def test_upload_without_file_part_is_400(client: httpx.Client) -> None:
    assert_problem(client.post("/files", data={"other": "x"}, files={"nope": ("a", b"x")}), 400, "malformed_request")
    assert_problem(client.post("/files", content=b"raw", headers={"Content-Type": "text/plain"}),
                   400, "malformed_request")


def test_unknown_tool_bad_params_and_unknown_file_are_422(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    body = assert_problem(client.post("/jobs", json={"tool": "nope", "inputFileIds": [ref["id"]]}), 422,
                          "unknown_tool")
    assert "tool" in body["errors"]
    body = assert_problem(client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                     "params": {"quality": "very"}}), 422, "invalid_params")
    assert "params.quality" in body["errors"]
    body = assert_problem(client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                     "params": {"colour": 1}}), 422, "invalid_params")
    assert "params.colour" in body["errors"]
    assert_problem(client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                              "outputFormat": "mp3"}), 422, "invalid_params")
    assert_problem(client.post("/jobs", json={"tool": "image-convert",
                                              "inputFileIds": ["file_00000000000000000000000000000000"]}),
                   422, "unknown_file")
    assert_problem(client.post("/jobs", json={"tool": "image-convert"}), 422, "invalid_params")


def test_content_not_accepted_by_tool_is_415(client: httpx.Client) -> None:
    ref = upload(client, "totally-a-picture.png", b"<!doctype html><html><body>hi</body></html>")
    assert ref["mimeType"] == "text/html"
    assert_problem(client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}),
                   415, "unsupported_format")


UPLOAD_LIMIT = 1_000_000


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of the module's own, for the tests that set what the whole server allows: an upload
    limit, a read bucket of 3 per key, and maintenance (set and lifted within its test)."""
    data = tmp_path_factory.mktemp("errors") / "data"
    data.mkdir()
    write_settings(data, max_upload_bytes=UPLOAD_LIMIT, read_rate_limit_per_second=0.5, read_rate_limit_burst=3)
    srv = start_server(data, data.parent / "server.log")
    yield srv
    srv.stop()


def test_upload_over_global_limit_is_413_while_streaming(limited: Server) -> None:
    srv, limit = limited, UPLOAD_LIMIT
    key = srv.create_key()
    with srv.client(key) as c:
        assert upload(c, "ok.bin", b"\x01" * limit)["sizeBytes"] == limit
        # its Content-Length is within the multipart allowance: the byte count is what answers
        assert_problem(c.post("/files", files={"file": ("x.bin", b"\x01" * (limit + 1))}), 413, "file_too_large")
    for content_length in (False, True):  # chunked, then declared up front
        streamed = stream_upload(srv, key, 128 * limit, content_length=content_length)
        assert_problem(streamed.response, 413, "file_too_large")
        assert not streamed.finished and streamed.sent < limit + IN_FLIGHT, (streamed.sent, streamed.total)
        assert list((srv.data_dir / "files" / "tmp").iterdir()) == []
    with srv.client(key) as c:
        assert c.get("/usage").status_code == 200  # still answering


def test_maintenance_and_disabled_tool_are_503(limited: Server) -> None:
    db = limited.database()
    with limited.client(limited.create_key()) as client:
        ref = upload(client, "a.png", png_bytes())
        body = {"tool": "image-convert", "inputFileIds": [ref["id"]]}
        db.set_setting("disabled_tools", '["image-convert"]')
        r = client.post("/jobs", json=body)
        assert_problem(r, 503, "tool_disabled")
        assert r.headers["retry-after"]
        assert client.get("/tools/image-convert").json()["available"] is False
        db.set_setting("disabled_tools", "[]")
        db.set_setting("maintenance", "1")
        assert_problem(client.post("/jobs", json=body), 503, "maintenance")
        db.set_setting("maintenance", "0")
        assert client.post("/jobs", json=body).status_code == 201


def test_tampered_and_expired_download_links(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    wait_job(client, job["id"])
    url = client.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]
    assert httpx.get(url).status_code == 200
    assert_problem(httpx.get(url.replace("signature=", "signature=0")), 403, "invalid_signature")
    file_id = url.split("/downloads/")[1].split("/")[0]
    other_id = ref["id"]
    assert_problem(httpx.get(url.replace(file_id, other_id)), 403, "invalid_signature")
    db = server.database()
    signer = LinkSigner(bytes.fromhex(db.get_setting("signing_secret") or ""))
    past = int(time.time()) - 10
    expired = f"{server.base_url}{signer.path(file_id, 'a.png', past)}"
    assert_problem(httpx.get(expired), 410, "link_expired")


@pytest.mark.backends
def test_purged_result_is_410(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    wait_job(client, job["id"])
    result = client.get(f"/jobs/{job['id']}/result").json()
    url = result["downloadUrl"]
    from localapi.core.service import Service

    service = Service.open(install_settings(server.data_dir))
    # this test's input and result past their retention; the shared server's other files are not
    mine = [ref["id"], *(f["id"] for f in result["files"])]
    service.db.execute(f"update files set expires_at = 0 where id in ({', '.join('?' * len(mine))})", *mine)
    assert service.purge() >= 2
    assert all(client.get(f"/files/{file_id}").status_code in (404, 410) for file_id in mine)  # both purged
    assert_problem(client.get(f"/jobs/{job['id']}/result"), 410, "result_expired")
    assert_problem(httpx.get(url), 410, "file_expired")


@pytest.mark.backends
def test_a_result_past_its_retention_is_410_before_the_purge_comes(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    wait_job(client, job["id"])
    assert client.get(f"/jobs/{job['id']}/result").status_code == 200
    db = server.database()
    try:  # retention has ended, the purge has not run yet: no link that would be dead on arrival
        db.execute("update files set expires_at = ? where job_id = ?", time.time() - 1, job["id"])
    finally:
        db.close()
    assert_problem(client.get(f"/jobs/{job['id']}/result"), 410, "result_expired")
    assert_problem(client.get(f"/jobs/{job['id']}", params={"include": "result"}), 410, "result_expired")
    assert client.get(f"/jobs/{job['id']}").json()["status"] == "DONE"  # the job itself is still there


def test_an_input_whose_bytes_were_just_purged_is_410_not_a_job_that_cannot_start(
        server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    stored = server.data_dir / "files" / ref["id"][5:7] / ref["id"]
    stored.unlink()  # the purge took the bytes; its record goes a moment later
    answer = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]})
    assert_problem(answer, 410, "file_expired")
    assert client.get("/jobs").json()["items"] == []  # no job was made


def test_rate_limit_gives_429_with_retry_after(limited: Server) -> None:
    with limited.client(limited.create_key()) as c:
        codes = [c.get("/tools").status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = c.get("/usage")
        assert_problem(r, 429, "rate_limited")
        assert int(r.headers["retry-after"]) >= 1


def test_idempotent_job_creation_replays_the_first_response(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    body = {"tool": "image-convert", "inputFileIds": [ref["id"]]}
    first = client.post("/jobs", json=body, headers={"Idempotency-Key": "abc"})
    again = client.post("/jobs", json=body, headers={"Idempotency-Key": "abc"})
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"] and again.headers["idempotent-replayed"] == "true"
    other = dict(body, outputFormat="jpg")
    assert_problem(client.post("/jobs", json=other, headers={"Idempotency-Key": "abc"}), 422,
                   "idempotency_mismatch")
    assert len(client.get("/jobs").json()["items"]) == 1


@pytest.mark.backends
def test_concurrent_identical_requests_make_one_job(client: httpx.Client, server: Server, api_key: str) -> None:
    ref = upload(client, "a.png", png_bytes())
    body = {"tool": "image-convert", "inputFileIds": [ref["id"]]}
    responses: list[httpx.Response] = []
    barrier = threading.Barrier(8)

    def post() -> None:
        with server.client(api_key) as c:
            barrier.wait()
            responses.append(c.post("/jobs", json=body, headers={"Idempotency-Key": "same"}))

    threads = [threading.Thread(target=post) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    created = {r.json()["id"] for r in responses if r.status_code == 201}
    assert len(created) == 1, [r.text for r in responses]
    assert all(r.status_code in (201, 409) for r in responses)
    for r in responses:
        if r.status_code == 409:
            assert_problem(r, 409, "idempotency_in_flight")
    assert len(client.get("/jobs").json()["items"]) == 1


def test_idempotent_upload_replays_and_rejects_other_content(client: httpx.Client) -> None:
    first = client.post("/files", files={"file": ("a.png", png_bytes())}, headers={"Idempotency-Key": "up"})
    again = client.post("/files", files={"file": ("a.png", png_bytes())}, headers={"Idempotency-Key": "up"})
    assert first.status_code == again.status_code == 201 and again.json()["id"] == first.json()["id"]
    other = client.post("/files", files={"file": ("a.png", png_bytes(color=(0, 0, 0)))},
                        headers={"Idempotency-Key": "up"})
    assert_problem(other, 422, "idempotency_mismatch")


def test_unknown_route_and_method_are_problems(client: httpx.Client) -> None:
    assert_problem(client.get("/nothing-here"), 404, "not_found")
    assert_problem(client.put("/jobs"), 405, "method_not_allowed")
