"""The contract's workflow on a real server: upload, create, poll, result, download."""

from __future__ import annotations

import io
import json
import socket
import time
import zipfile

import httpx
import pytest
from PIL import Image

from tests.conftest import Server, assert_problem, png_bytes, upload, wait_job


@pytest.mark.backends
def test_png_to_webp_full_lifecycle(client: httpx.Client) -> None:
    ref = upload(client, "photo.png", png_bytes(80, 60))
    assert ref["id"].startswith("file_") and ref["mimeType"] == "image/png" and ref["sizeBytes"] > 0
    assert ref["originalName"] == "photo.png"

    r = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"})
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["id"].startswith("job_") and job["status"] == "QUEUED" and job["progress"] == 0
    assert job["tool"] == "image-convert" and job["outputFormat"] == "webp"

    done = wait_job(client, job["id"])
    assert done["status"] == "DONE" and done["progress"] == 100, done

    result = client.get(f"/jobs/{job['id']}/result").json()
    assert set(result) >= {"downloadUrl", "expiresAt", "files"}
    assert len(result["files"]) == 1 and result["files"][0]["name"] == "photo.webp"
    download = httpx.get(result["downloadUrl"])
    assert download.status_code == 200
    assert download.headers["x-content-type-options"] == "nosniff"
    assert download.headers["content-disposition"].startswith('attachment; filename="photo.webp"')
    image = Image.open(io.BytesIO(download.content))
    assert image.format == "WEBP" and image.size == (80, 60)


def test_progress_is_monotonic_and_ends_at_100(client: httpx.Client) -> None:
    from tests.conftest import image_pdf_bytes

    ref = upload(client, "scan.pdf", image_pdf_bytes(pages=8, size=900))
    job = client.post("/jobs", json={"tool": "pdf-compress", "inputFileIds": [ref["id"]],
                                     "params": {"level": "extreme"}}).json()
    seen = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = client.get(f"/jobs/{job['id']}").json()
        seen.append(state["progress"])
        if state["status"] in ("DONE", "FAILED"):
            break
        time.sleep(0.02)
    assert state["status"] == "DONE", state
    assert seen == sorted(seen), seen
    assert seen[-1] == 100
    assert any(0 < p < 100 for p in seen), f"no intermediate progress seen: {seen}"


@pytest.mark.backends
def test_several_inputs_make_one_output_each_and_a_zip(client: httpx.Client) -> None:
    ids = [upload(client, f"img{n}.png", png_bytes(20 + n, 20))["id"] for n in range(3)]
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": ids, "outputFormat": "jpg"}).json()
    assert wait_job(client, job["id"])["status"] == "DONE"
    result = client.get(f"/jobs/{job['id']}/result").json()
    assert sorted(f["name"] for f in result["files"]) == ["img0.jpg", "img1.jpg", "img2.jpg"]
    bundle = httpx.get(result["downloadUrl"])
    assert bundle.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as zf:
        assert sorted(zf.namelist()) == ["img0.jpg", "img1.jpg", "img2.jpg"]
        assert Image.open(io.BytesIO(zf.read("img1.jpg"))).size == (21, 20)
    for f in result["files"]:
        assert httpx.get(f["downloadUrl"]).content[:3] == b"\xff\xd8\xff"


@pytest.mark.backends
def test_download_supports_range_requests(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes(300, 300))
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                     "outputFormat": "bmp"}).json()
    wait_job(client, job["id"])
    url = client.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]
    whole = httpx.get(url).content
    part = httpx.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == whole[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(whole)}"
    tail = httpx.get(url, headers={"Range": "bytes=-5"})
    assert tail.content == whole[-5:]
    assert_problem(httpx.get(url, headers={"Range": f"bytes={len(whole) + 10}-"}), 416, "range_not_satisfiable")


@pytest.mark.backends
def test_job_list_filters_and_paginates(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    ids = [client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()["id"]
           for _ in range(5)]
    for job_id in ids:
        wait_job(client, job_id)
    first = client.get("/jobs", params={"limit": 2}).json()
    assert [j["id"] for j in first["items"]] == ids[::-1][:2]
    second = client.get("/jobs", params={"limit": 2, "cursor": first["nextCursor"]}).json()
    third = client.get("/jobs", params={"limit": 2, "cursor": second["nextCursor"]}).json()
    listed = [j["id"] for page in (first, second, third) for j in page["items"]]
    assert listed == ids[::-1] and third["nextCursor"] is None
    assert len(client.get("/jobs", params={"status": "DONE", "tool": "image-convert"}).json()["items"]) == 5
    assert client.get("/jobs", params={"tool": "pdf-compress"}).json()["items"] == []


@pytest.mark.backends
def test_delete_file_and_job(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
    wait_job(client, job["id"])
    result_file = client.get(f"/jobs/{job['id']}/result").json()["files"][0]["id"]
    assert client.delete(f"/jobs/{job['id']}").status_code == 204
    assert_problem(client.get(f"/jobs/{job['id']}"), 404, "job_not_found")
    assert_problem(client.get(f"/files/{result_file}"), 404, "file_not_found")
    assert client.get(f"/files/{ref['id']}").json()["id"] == ref["id"]
    assert client.delete(f"/files/{ref['id']}").status_code == 204
    assert_problem(client.get(f"/files/{ref['id']}"), 404, "file_not_found")


def test_tools_list_publishes_schema_and_availability(client: httpx.Client) -> None:
    tools = client.get("/tools").json()
    by_id = {t["id"]: t for t in tools}
    convert = by_id["image-convert"]
    assert convert["category"] == "images" and convert["available"] is True
    assert {"png", "jpg", "webp"} <= set(convert["accepts"]) and "webp" in convert["produces"]
    assert convert["params"]["type"] == "object" and "quality" in convert["params"]["properties"]
    compress = client.get("/tools/pdf-compress").json()
    assert compress["params"]["properties"]["level"]["default"] == "recommended"
    assert [t["id"] for t in client.get("/tools", params={"category": "pdf"}).json()]
    assert all(t["category"] == "pdf" for t in client.get("/tools", params={"category": "pdf"}).json())
    assert_problem(client.get("/tools/nope"), 404, "tool_not_found")


def test_health_and_usage(server: Server, client: httpx.Client) -> None:
    health = httpx.get(f"{server.base_url}/health").json()
    assert health["status"] == "ok" and health["apiVersion"] == "1.0.0" and "PyMuPDF" in health["engines"]
    # without a key, nothing of where the data is kept, the machine's name or the processes' ids
    assert set(health) == {"status", "version", "apiVersion", "maintenance", "engines"}, health
    text = json.dumps(health)
    assert str(server.data_dir) not in text and socket.gethostname() not in text
    with_key = client.get("/health").json()
    assert with_key["backends"]["database"]["ok"] and with_key["workerProcesses"][0]["pid"] == server.process.pid
    usage = client.get("/usage").json()
    assert usage["jobsToday"] == 0 and usage["dailyJobQuota"] is None


def test_openapi_is_served_with_contract_version(server: Server) -> None:
    spec = httpx.get(f"{server.base_url}/openapi.json").json()
    assert spec["info"]["version"] == "1.0.0"
    assert "/v1/jobs/{id}/result" in spec["paths"]
    assert httpx.get(f"{server.base_url}/docs").status_code == 200
