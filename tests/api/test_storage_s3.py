"""Stored files in an S3-compatible bucket (``storage_url = "s3://bucket/prefix"``): a real SeaweedFS, a real
``filekiln serve``, real conversions. The data dir then holds no file's bytes but a bounded local cache."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import (
    Server,
    assert_problem,
    free_port,
    png_bytes,
    run_cli,
    start_server,
    upload,
    write_settings,
)
from tests.seaweed import ACCESS_KEY, REGION, SECRET_KEY, Seaweed, needs_weed

pytestmark = [needs_weed, pytest.mark.embedded]  # sets up its own bucket


def start(tmp_path: Path, settings: dict[str, Any]) -> Server:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    write_settings(data, **settings)
    return start_server(data, tmp_path / "server.log", "--workers", "1")


@pytest.fixture(scope="module")
def bucket_server(tmp_path_factory: pytest.TempPathFactory, seaweed: Seaweed) -> Iterator[tuple[Server, str]]:
    """A server on a bucket prefix of its own, without a cache, that the module's first tests share: each
    looks at the objects its own uploads and jobs made (the set that appeared while it ran)."""
    prefix = f"t-shared-{time.monotonic_ns()}"
    srv = start(tmp_path_factory.mktemp("bucket"), {**seaweed.settings("filekiln", prefix), "storage_cache_mb": 0})
    yield srv, prefix
    srv.stop()


def client(srv: Server) -> httpx.Client:
    return httpx.Client(base_url=srv.base_url, headers={"X-API-Key": srv.create_key("s3")}, timeout=60)


def convert(c: httpx.Client, file_id: str) -> dict[str, Any]:
    r = c.post("/jobs", params={"wait": 60, "include": "result"},
               json={"tool": "image-convert", "inputFileIds": [file_id], "outputFormat": "webp"})
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["status"] == "DONE", job
    return job


def files_on_disk(data: Path) -> list[Path]:
    """The file bytes in the data dir's store, outside the spool and the cache."""
    root = data / "files"
    return [p for p in root.rglob("*") if p.is_file() and p.parent.name not in ("tmp", "cache")]


def test_uploads_and_results_live_in_the_bucket_and_downloads_stream_from_it(
        bucket_server: tuple[Server, str], seaweed: Seaweed) -> None:
    srv, prefix = bucket_server
    picture = png_bytes(320, 200, (10, 120, 240))
    before = set(seaweed.keys("filekiln", prefix + "/"))
    with client(srv) as c:
        ref = upload(c, "photo.png", picture)
        job = convert(c, ref["id"])
        result = job["result"]["files"][0]
        stored = set(seaweed.keys("filekiln", prefix + "/")) - before
        assert stored == {f"{prefix}/{ref['id']}", f"{prefix}/{result['id']}"}
        assert seaweed.client().get_object(Bucket="filekiln", Key=f"{prefix}/{ref['id']}")["Body"].read() == picture
        # no bytes in the data dir's store, none left in the spool, and without a cache (storage_cache_mb = 0)
        # only the copy the job's check fetched last
        assert files_on_disk(srv.data_dir) == []
        assert [p.name for p in (srv.data_dir / "files" / "cache").iterdir()] == [ref["id"]]
        assert list((srv.data_dir / "files" / "tmp").iterdir()) == []
        url = job["result"]["downloadUrl"]
        assert urlsplit(url).netloc == urlsplit(srv.base_url).netloc, "downloads go through the API by default"
        whole = httpx.get(url)
        assert whole.status_code == 200 and whole.content[8:12] == b"WEBP"
        assert len(whole.content) == result["sizeBytes"]
        assert 'filename="photo.webp"' in whole.headers["content-disposition"]
        part = httpx.get(url, headers={"Range": "bytes=8-11"})
        assert part.status_code == 206 and part.content == b"WEBP"
        assert part.headers["content-range"] == f"bytes 8-11/{result['sizeBytes']}"
        tail = httpx.get(url, headers={"Range": "bytes=-4"})
        assert tail.status_code == 206 and tail.content == whole.content[-4:]
        head = httpx.head(url)
        assert head.status_code == 200 and head.headers["content-length"] == str(result["sizeBytes"])


def test_a_large_upload_streams_through_to_the_bucket(bucket_server: tuple[Server, str], seaweed: Seaweed) -> None:
    srv, prefix = bucket_server
    size = 24 * 1024 * 1024  # past boto3's multipart threshold (8 MiB)
    chunk = os.urandom(1024 * 1024)
    with client(srv) as c:
        r = c.post("/files", files={"file": ("blob.bin", b"".join([chunk] * (size // len(chunk))))})
        assert r.status_code == 201, r.text
        ref = r.json()
        head = seaweed.client().head_object(Bucket="filekiln", Key=f"{prefix}/{ref['id']}")
        assert head["ContentLength"] == size == ref["sizeBytes"]


def test_deleting_a_file_removes_its_object_and_its_links_answer_410(
        bucket_server: tuple[Server, str], seaweed: Seaweed) -> None:
    srv, prefix = bucket_server
    before = set(seaweed.keys("filekiln", prefix + "/"))
    with client(srv) as c:
        ref = upload(c, "gone.png", png_bytes())
        job = convert(c, ref["id"])
        result_id = job["result"]["files"][0]["id"]
        url = job["result"]["downloadUrl"]
        assert c.delete(f"/jobs/{job['id']}").status_code == 204
        assert f"{prefix}/{result_id}" not in seaweed.keys("filekiln", prefix + "/")
        assert_problem(httpx.get(url), 410, "file_deleted")
        assert c.delete(f"/files/{ref['id']}").status_code == 204
        assert set(seaweed.keys("filekiln", prefix + "/")) == before


def test_presigned_downloads_come_from_the_bucket_with_the_name_and_expiry(
        tmp_path: Path, seaweed: Seaweed) -> None:
    settings = {**seaweed.settings("filekiln", "presigned"), "s3_presigned_downloads": True,
                "download_ttl_seconds": 600}
    srv = start(tmp_path, settings)
    try:
        with client(srv) as c:
            ref = upload(c, "Straße.png", png_bytes())
            job = convert(c, ref["id"])
            url = job["result"]["downloadUrl"]
            parts = urlsplit(url)
            assert parts.netloc == f"127.0.0.1:{seaweed.s3_port}", url
            assert "X-Amz-Expires=600" in parts.query or "X-Amz-Expires=599" in parts.query, parts.query
            r = httpx.get(url)
            assert r.status_code == 200 and r.content[8:12] == b"WEBP"
            assert "filename*=UTF-8''Stra%C3%9Fe.webp" in r.headers["content-disposition"]
            assert r.headers["content-type"] == "image/webp"
            tampered = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")
            assert httpx.get(tampered).status_code == 403
    finally:
        srv.stop()


def test_the_standard_aws_variables_reach_the_bucket(tmp_path: Path, seaweed: Seaweed,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"AWS_ENDPOINT_URL": seaweed.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
           "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
           "FILEKILN_STORAGE_URL": f"s3://{seaweed.bucket('filekiln')}/by-env"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    srv = start(tmp_path, {})
    try:
        with client(srv) as c:
            ref = upload(c, "env.png", png_bytes())
            convert(c, ref["id"])
            health = c.get("/health").json()
        assert health["backends"]["storage"] == {"kind": "s3", "target": "s3://filekiln/by-env/", "ok": True,
                                                 "error": None}
        assert f"by-env/{ref['id']}" in seaweed.keys("filekiln", "by-env/")
    finally:
        srv.stop()


def test_a_store_that_does_not_answer_is_a_503_and_leaves_nothing_behind(tmp_path: Path, seaweed: Seaweed) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    srv = start(tmp_path, {**seaweed.settings("filekiln", "dead"), "s3_endpoint_url": dead})
    try:
        with client(srv) as c:
            r = c.post("/files", files={"file": ("lost.png", png_bytes())})
            problem = assert_problem(r, 503, "storage_unavailable")
            assert "does not answer" in problem["detail"], problem
            assert r.headers["retry-after"] == "30"
            health = c.get("/health").json()["backends"]["storage"]
            assert health["ok"] is False and health["error"] == "the endpoint does not answer"
            assert c.get("/health").status_code == 200
        assert list((srv.data_dir / "files" / "tmp").iterdir()) == []
        assert files_on_disk(srv.data_dir) == []
    finally:
        srv.stop()


def test_doctor_says_what_is_wrong_with_the_bucket(tmp_path: Path, seaweed: Seaweed) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_settings(data, **seaweed.settings("filekiln", "doctor"))
    assert "ok    file store: the bucket s3://filekiln/doctor/ answers" in run_cli(data, "doctor", check=False)
    write_settings(data, **{**seaweed.settings("filekiln", "doctor"), "storage_url": "s3://no-such-bucket-here/x"})
    out = run_cli(data, "doctor", check=False)
    assert "FAIL  file store: the bucket s3://no-such-bucket-here/x/: the bucket no-such-bucket-here does not " \
           "exist" in out, out
    write_settings(data, **{**seaweed.settings("filekiln", "doctor"), "s3_secret_access_key": "wrong"})
    assert "the access key or its secret was refused" in run_cli(data, "doctor", check=False)
    write_settings(data, storage_url="ftp://somewhere")
    assert "storage_url must be empty (the data dir) or s3://bucket/prefix" in run_cli(data, "doctor", check=False)


def test_the_cache_keeps_recent_files_within_its_bound(tmp_path: Path, seaweed: Seaweed) -> None:
    srv = start(tmp_path, {**seaweed.settings("filekiln", "cache"), "storage_cache_mb": 1})
    try:
        with client(srv) as c:
            refs = [upload(c, f"big{i}.bin", os.urandom(400 * 1024)) for i in range(5)]
        cache = srv.data_dir / "files" / "cache"
        kept = sorted(p.name for p in cache.iterdir())
        assert sum(p.stat().st_size for p in cache.iterdir()) <= 1024 * 1024
        assert kept == sorted(r["id"] for r in refs[-2:]), "the most recent are kept, the oldest dropped"
    finally:
        srv.stop()


def test_a_refused_upload_says_why_without_a_path_of_the_server(tmp_path: Path, seaweed: Seaweed) -> None:
    srv = start(tmp_path, {**seaweed.settings("filekiln", "refused"), "s3_secret_access_key": "not-the-secret"})
    try:
        with client(srv) as c:
            problem = assert_problem(c.post("/files", files={"file": ("x.png", png_bytes())}), 503,
                                     "storage_unavailable")
        assert "the access key or its secret was refused" in problem["detail"], problem
        assert str(srv.data_dir) not in problem["detail"] and ".part" not in problem["detail"], problem
        assert list((srv.data_dir / "files" / "tmp").iterdir()) == []
    finally:
        srv.stop()
